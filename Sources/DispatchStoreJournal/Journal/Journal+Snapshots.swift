public import DispatchStore
public import Foundation

extension Journal {
    /// The states of some stores as a snapshot holds them, checked and decoded, ready to restore.
    ///
    /// Made by ``Journal/decodeSnapshot(_:for:source:migrations:)``; nothing is changed until
    /// ``restore()`` is called.
    @_spi(DispatchStoreNATS)
    public struct SnapshotContents: Sendable {
        /// The position the snapshot was taken at, as given to
        /// ``Journal/encodeSnapshot(of:storeIdentifiers:position:destination:)``.
        public let position: UInt64
        /// Each store's sequence number in the snapshot, by identifier.
        public let sequenceNumbers: [String: UInt64]
        /// What was ignored: stores the snapshot holds that the dispatcher does not have
        /// (``JournalError/Code/unknownStore``).
        public let problems: [JournalError]
        private let states: [(store: any JournaledStore, state: any StateType, sequenceNumber: UInt64)]

        init(
            position: UInt64,
            problems: [JournalError],
            states: [(store: any JournaledStore, state: any StateType, sequenceNumber: UInt64)]
        ) {
            self.position = position
            self.problems = problems
            self.states = states
            sequenceNumbers = Dictionary(states.map { ($0.store.identifier, $0.sequenceNumber) }) { first, _ in first }
        }

        /// Sets every store the snapshot holds to its state and sequence number.
        ///
        /// Each store's observers hear of the change with a `nil` action, as after a recovery. The
        /// stores are set one after the other, not at one instant: call this while nothing else
        /// changes them. A store that refuses outside changes
        /// (``DispatchStore/AnyStore/outsideChangeRefusal``) is set too: restoring a snapshot is how the owner
        /// of such a store brings it to a known state.
        ///
        /// - Note: Thread-safe; not from inside a store's `updateState` closure or `reduce(_:into:)`.
        public func restore() {
            for (store, state, sequenceNumber) in states {
                _ = store.restore(anyState: state, sequenceNumber: sequenceNumber)
            }
        }
    }

    /// Takes a consistent cut of some of a dispatcher's stores and encodes it in the format of the
    /// journal's snapshot files: for keeping snapshots somewhere else than a journal directory (a
    /// key-value store, an object store).
    ///
    /// The bytes are a header line, with the format's name and version, `position` (as `records`),
    /// and the byte count and the 64-bit FNV-1a digest of the lines after it; then one line per store
    /// with its state's version (``VersionedState``), its sequence number and its state as JSON.
    /// ``decodeSnapshot(_:for:source:migrations:)`` checks and reads them back.
    ///
    /// ```swift
    /// let bytes = try Journal.encodeSnapshot(of: dispatcher, storeIdentifiers: ["balances"], position: 2_000, destination: "bucket LEDGER")
    /// ```
    ///
    /// - Parameters:
    ///   - dispatcher: The dispatcher the stores are registered with.
    ///   - storeIdentifiers: The stores to include; every one must be registered and have an
    ///     `Encodable` state.
    ///   - position: What the cut corresponds to, for the reader: a count of records, a message's
    ///     sequence number in a stream.
    ///   - destination: Where the snapshot goes, for error messages.
    /// - Returns: The snapshot's bytes.
    /// - Throws: ``JournalError`` naming `destination` and the store: ``JournalError/Code/unknownStore``
    ///   for a store that is not registered, ``JournalError/Code/notCodable`` for a state that is not
    ///   `Encodable`, ``JournalError/Code/writeFailed`` when a state fails to encode or the stores
    ///   cannot be read (the calling thread is inside a store's `updateState` or `reduce(_:into:)`).
    /// - Note: Thread-safe. The cut holds the states of the stores at one instant, with no commit in
    ///   between; take it when nothing but your own code changes them if `position` is to describe it.
    @_spi(DispatchStoreNATS)
    public static func encodeSnapshot(
        of dispatcher: Dispatcher,
        storeIdentifiers: [String],
        position: UInt64,
        destination: String
    ) throws(JournalError) -> Data {
        for identifier in storeIdentifiers {
            guard let store = dispatcher.store(with: identifier) else {
                throw JournalError(
                    .unknownStore,
                    path: destination,
                    storeIdentifier: identifier,
                    message: "no snapshot for \(destination): store '\(identifier)' is not registered"
                )
            }
            guard store.stateType is any (StateType & Encodable).Type else {
                throw JournalError(
                    .notCodable,
                    path: destination,
                    storeIdentifier: identifier,
                    message: "no snapshot for \(destination): the state type \(store.stateType) of store "
                        + "'\(identifier)' is not Encodable"
                )
            }
        }
        guard let cut = dispatcher.consistentCut() else {
            throw JournalError(
                .writeFailed,
                path: destination,
                message: "no snapshot for \(destination): the stores cannot be read from inside a store's "
                    + "updateState or reduce(_:into:)"
            )
        }
        let wanted = Set(storeIdentifiers)
        return try JournalSnapshot.encode(
            generation: 0,
            recordCount: Int(position),
            cut: cut.filter { wanted.contains($0.storeIdentifier) },
            path: destination
        )
    }

    /// Checks a snapshot made by ``encodeSnapshot(of:storeIdentifiers:position:destination:)`` (its
    /// format, version, byte count and digest) and decodes each store's state, without changing any
    /// store.
    ///
    /// States written with an older ``VersionedState/stateVersion`` go through `migrations`, as
    /// in a journal's recovery. Call ``SnapshotContents/restore()`` on the result to set the stores.
    ///
    /// - Parameters:
    ///   - data: The snapshot's bytes.
    ///   - dispatcher: The dispatcher whose stores the states are for.
    ///   - source: Where the snapshot comes from, for error messages.
    ///   - migrations: How to upgrade states of older versions.
    /// - Returns: The decoded states, with the snapshot's position.
    /// - Throws: ``JournalError`` naming `source` (and the store, when one is involved):
    ///   ``JournalError/Code/corruptSnapshot`` for bytes that are not a whole snapshot,
    ///   ``JournalError/Code/newerFormat``, ``JournalError/Code/newerStateVersion``,
    ///   ``JournalError/Code/missingMigration`` or ``JournalError/Code/undecodableState``.
    /// - Note: Thread-safe.
    @_spi(DispatchStoreNATS)
    public static func decodeSnapshot(
        _ data: Data,
        for dispatcher: Dispatcher,
        source: String,
        migrations: [StateMigration] = []
    ) throws(JournalError) -> SnapshotContents {
        let snapshot: JournalSnapshot
        switch Result(catching: { () throws(JournalSnapshot.Problem) in try JournalSnapshot.parse(Array(data)) }) {
        case .success(let parsed):
            snapshot = parsed
        case .failure(.newer(let version)):
            throw JournalSnapshot.newerFormat(version, source: source)
        case .failure(.damaged(let reason)):
            throw JournalError(.corruptSnapshot, path: source, message: "the snapshot \(source) is damaged: \(reason)")
        }
        let stores = dispatcher.stores.compactMap { $0 as? any JournaledStore }
        let decoder = JournalRecovery(
            files: JournalDirectory(path: source),
            dispatcher: dispatcher,
            stores: stores,
            migrations: migrations
        )
        var problems: [JournalError] = []
        let states = try decoder.decodeStates(snapshot, path: source, problems: &problems)
        return SnapshotContents(
            position: UInt64(snapshot.recordCount),
            problems: problems,
            states: states.map { (store: $0.0, state: $0.1, sequenceNumber: $0.2) }
        )
    }
}
