public import DispatchStore
import Foundation

/// Durable state for a dispatcher's stores: a directory of action records and periodic snapshots,
/// recovered when the program starts again (Akka Persistence's journal with `snapshotEvery`).
///
/// ```swift
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: balances)
/// let journal = try Journal(directory: "/var/lib/ledger", dispatcher: dispatcher, snapshotEvery: 1_000)
/// print(journal.recovery)  // recovered 41200 records: snapshot 41 (41000 records) and 200 after it
/// ```
///
/// Opening it recovers every registered store from the directory (the latest valid snapshot, then
/// the records after it, each store's in its own order), then registers the journal as middleware,
/// so that every transaction a store applies is recorded before its completion runs. Every
/// `snapshotEvery` records it takes a consistent cut of every store and writes it atomically
/// (temporary file, `fsync`, rename); records from before the previous snapshot are then removed,
/// so restarting costs one snapshot and at most about `snapshotEvery` records, whatever the length
/// of the history. ``close()`` writes a last snapshot.
///
/// **Requirements.** Every store's state and action type is `Codable`, and action types have
/// stable names (see ``StablyNamed``). Register every store, then open the journal, before
/// dispatching anything. Reducers must be deterministic: recovery replays records through them.
///
/// **Crashes and damage.** A crash at any byte loses at most the records being written (their
/// transactions' completions had not run). Recovery cuts a torn tail away, falls back to the
/// previous snapshot when the latest is damaged, skips records it cannot read, and reports each in
/// ``recovery``; it moves or copies what it cannot read into `quarantine/` and never overwrites it.
/// It refuses to open, changing nothing, when it cannot recover a consistent state (a snapshot of a
/// newer format or state version, a state without a migration, no readable snapshot left).
///
/// **One writer per directory.** The journal holds an advisory lock (`flock(2)`) on `journal.lock`
/// in its directory from before recovery until ``close()``; the file holds the writer's process id
/// and name. Another journal on the same directory, in another process or this one, is refused with
/// ``JournalError/Code/locked`` naming that holder. The kernel releases the lock when the process
/// dies, `kill -9` included, so a crash never leaves a stale lock.
///
/// **Failures.** A record that cannot be written stops the journal: later records would follow a
/// hole, so they are refused too. ``firstFailure`` and `onError` report it; a service should stop.
///
/// - Note: Thread-safe. Records are written one at a time under a lock, in the order their
///   transactions finish; a snapshot is encoded and written outside that lock.
public final class Journal: Middleware, @unchecked Sendable {
    // @unchecked: the mutable state is in `state`, behind its lock; `snapshotLock` serialises
    // snapshot writing; `lock` is released only under `state`'s lock; the rest is immutable.

    /// The journal's directory.
    public let directory: String
    /// How many records are written between two snapshots.
    public let snapshotEvery: Int
    /// Whether every record is flushed to the disk (`fsync`) before its transaction's completion runs.
    public let syncsToDisk: Bool
    /// What recovery found and did when the journal was opened.
    public let recovery: Recovery

    let files: JournalDirectory
    let onError: (@Sendable (JournalError) -> Void)?
    let state: LockedBox<State>
    /// Held while a snapshot is written, so that only one is.
    let snapshotLock = LockedBox(())
    /// The directory's writer lock, held from before recovery until ``close()``.
    let lock: WriterLock

    struct State {
        var file: AppendFile?
        var generation: Int
        var recordCount: Int
        var sinceSnapshot = 0
        var dispatcher: Weak<Dispatcher>?
        var stopped = false
        var closed = false
        var refused = 0
        var firstFailure: JournalError?
    }

    /// Opens (or creates) the journal in `directory` and recovers `dispatcher`'s stores from it.
    ///
    /// - Parameters:
    ///   - directory: The directory; created if missing. It must be empty or hold a journal.
    ///   - dispatcher: The dispatcher whose registered stores to recover and record. Nothing may
    ///     have been dispatched to them yet.
    ///   - snapshotEvery: How many records between two snapshots; 1 or more.
    ///   - syncsToDisk: Whether to `fsync` after every record, so that a power loss keeps every
    ///     finished transaction (a crash of the process loses nothing written either way).
    ///   - migrations: How to upgrade states from snapshots with an older ``VersionedState/stateVersion``.
    ///   - onError: Called with each failure while running (a record or snapshot not written), on
    ///     the thread that met it.
    /// - Throws: ``JournalError`` naming the file and what is wrong when the directory cannot be
    ///   used (not a directory, a symbolic link loop, another writer holding its lock:
    ///   ``JournalError/Code/locked``) or no consistent state can be recovered; the directory is
    ///   then left as it was.
    public init(
        directory: String,
        dispatcher: Dispatcher,
        snapshotEvery: Int = 1_000,
        syncsToDisk: Bool = false,
        migrations: [StateMigration] = [],
        onError: (@Sendable (JournalError) -> Void)? = nil
    ) throws(JournalError) {
        precondition(snapshotEvery >= 1, "DispatchStore: Journal(snapshotEvery: \(snapshotEvery)) must be 1 or more")
        self.directory = directory
        self.snapshotEvery = snapshotEvery
        self.syncsToDisk = syncsToDisk
        self.onError = onError
        files = JournalDirectory(path: directory)
        let clock = ContinuousClock()
        let start = clock.now
        let stores = try Journal.checkStores(of: dispatcher, directory: directory)
        (lock, _) = try files.prepare()
        var recovered = try JournalRecovery(
            files: files,
            dispatcher: dispatcher,
            stores: stores,
            migrations: migrations
        )
        .run()
        recovered.report.duration = clock.now - start
        recovery = recovered.report
        var initial = State(generation: recovered.generation, recordCount: recovered.report.recordCount)
        initial.dispatcher = Weak(dispatcher)
        state = LockedBox(initial)
        if recovered.continues {
            try openRecords(generation: recovered.generation)
        } else {
            try startGeneration(after: recovered.lastGeneration, in: dispatcher)
        }
        dispatcher.register(middleware: self)
    }

    /// How many records the journal's history holds: those recovered, and those written since.
    public var recordCount: Int {
        state.withLockedValue { $0.recordCount }
    }

    /// The first failure while running, or `nil` while every record was written.
    public var firstFailure: JournalError? {
        state.withLockedValue { $0.firstFailure }
    }

    /// Writes a snapshot now, instead of waiting for `snapshotEvery` records.
    ///
    /// - Throws: ``JournalError`` with code ``JournalError/Code/writeFailed`` when it cannot be
    ///   written, or ``JournalError/Code/closed`` after ``close()`` or a failed record.
    public func snapshot() throws(JournalError) {
        snapshotLock.lock()
        defer { snapshotLock.unlock() }
        try takeSnapshot()
    }

    /// Writes a last snapshot (when records were written since the previous one), closes the
    /// journal and releases its directory's lock; transactions finishing later are not recorded.
    ///
    /// Call it once the dispatcher is idle (after ``DispatchStore/Dispatcher/shutdown(_:timeout:)``): the next
    /// start then recovers from that snapshot alone. Calling it again does nothing more.
    ///
    /// - Throws: The first failure since the journal was opened (``firstFailure``), or the
    ///   failure to write the last snapshot.
    public func close() throws(JournalError) {
        snapshotLock.lock()
        defer { snapshotLock.unlock() }
        let (alreadyClosed, pending, stopped) = state.withLockedValue { state in
            (state.closed, state.sinceSnapshot > 0, state.stopped)
        }
        if !alreadyClosed && pending && !stopped {
            do {
                try takeSnapshot()
            } catch {
                record(error)
            }
        }
        let failure = state.withLockedValue { state -> JournalError? in
            if !state.closed {
                state.file?.close()
                state.file = nil
                lock.release()
                state.closed = true
            }
            return state.firstFailure
        }
        if let failure { throw failure }
    }

    /// Runs until the task running it is cancelled, then closes the journal: the shape of
    /// swift-service-lifecycle's `Service`, so that `extension Journal: Service {}` is all a program
    /// using that package needs.
    ///
    /// In a service group, list the journal before the dispatcher: services stop in reverse order,
    /// so the dispatcher drains first and the journal then writes its last snapshot.
    ///
    /// - Throws: What ``close()`` throws.
    public func run() async throws {
        await waitForCancellation()
        try close()
    }

    // MARK: Middleware

    /// Does nothing: records are written when transactions finish.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch.
    ///   - action: The action.
    ///   - store: The store.
    public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    /// Does nothing: records are written when transactions finish.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch.
    ///   - action: The action.
    ///   - store: The store.
    public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    /// Records the transaction, when a store applied its action, and takes a snapshot every
    /// `snapshotEvery` records.
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        write(result, in: dispatcher)
    }

    /// Reports a store registered after the journal opened whose state or action type is not
    /// `Codable`: its changes could not be recovered.
    ///
    /// - Parameters:
    ///   - store: The new store.
    ///   - dispatcher: The dispatcher.
    public func didRegister(store: any AnyStore, in dispatcher: Dispatcher) {
        do {
            _ = try Journal.check(store, directory: directory)
        } catch {
            record(error)
            onError?(error)
        }
    }
}
