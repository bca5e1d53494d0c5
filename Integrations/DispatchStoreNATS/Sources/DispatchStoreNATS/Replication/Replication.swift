@_spi(DispatchStoreNATS) public import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

/// Replicates chosen stores of a dispatcher through a NATS JetStream stream: every replica appends
/// actions to the stream, and applies the stream's messages, in stream order, to its stores.
///
/// ```swift
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: balances)
/// let replication = try await Replication(
///     dispatcher: dispatcher,
///     stores: [balances],
///     configuration: Replication.Configuration(servers: ["nats://127.0.0.1:4222"], stream: "LEDGER")
/// )
/// let outcome = try await replication.perform(LedgerAction.deposit(account: "alice", cents: 500))
/// print(outcome.sequence, balances.state.cents["alice"] ?? 0)  // the deposit is applied here already
/// ```
///
/// **The model: state-machine replication.** Each action performed is appended to the stream as
/// the record the action log writes (its type and payload), with a unique message id, so that an
/// append retried after a lost acknowledgement is stored once. The stream orders every append.
/// Every replica, the appending one included, applies the messages in that order, one at a time
/// (a `.sync` dispatch on a thread of its own), so a replicated store's state is a function of the
/// stream's prefix, and all replicas converge. ``perform(_:timeout:)`` returns once this replica
/// has applied its action (read-your-writes), with the ``DispatchResult`` and the sequence number.
///
/// **Reducers must be deterministic.** A replicated store's reducer may depend only on its state,
/// the action and the states of the stores it waits for: not on the clock, random numbers, the
/// network, or anything else that differs between replicas or between a first run and a catch-up.
/// Operations that finish later (an ``ActionOperation`` finishing on another thread) are fine: a
/// replica applies the next message only when the previous one finished, so every store commits in
/// stream order.
///
/// **Changes outside the stream are refused**, so that no replica holds a change the others never
/// see: a dispatch that reaches a replicated store, other than the replica's own application of a
/// message, is cancelled before any store runs and reported to `onError` as
/// ``ReplicationError/Code/changeOutsideStream``; the stores refuse changes no action makes
/// (``AnyStore/outsideChangeRefusal``): `updateState` outside their operations stops the
/// program, a recorder's restore throws, a ``Journal`` refuses to open. Stores that are not
/// replicated live in the same dispatcher as usual, and middleware (a recorder, an action log, a
/// tester) see every action a replica applies.
///
/// **Snapshots and catch-up.** Every `snapshotEvery` messages, the replica that appended the message
/// at that sequence number takes a consistent cut of the replicated stores and writes it to a
/// key-value bucket (in the journal's snapshot format, with its version and digest, in chunks when
/// it exceeds the server's `max_payload`). Starting, a replica loads the latest valid snapshot,
/// reads the stream from the message after it, and reports what it did in ``catchUp``. A message
/// the stream's limits discarded before a replica applied it is never skipped: the replica loads a
/// snapshot that covers it, or stops with ``ReplicationError/Code/gap`` naming the messages.
///
/// - Note: Thread-safe; every method may be called from any task. Messages are applied on the
///   replica's own thread, where `onApply`, the stores' observers and the middleware's hooks for
///   them run: do not wait there for the replication (for ``perform(_:timeout:)``).
public final class Replication: Sendable {
    /// How long one append waits for its acknowledgement before it is sent again (the perform's own
    /// deadline ends it earlier when it comes first).
    ///
    /// Never short: nats.c registers a message for its acknowledgement before it sends it, and a
    /// timeout that fires before the send is done hands the message to the acknowledgement handler,
    /// which frees it, while the send still reads it.
    static let attemptTimeout = Duration.seconds(5)

    /// The configuration.
    public let configuration: Configuration
    /// What the replica did when it started.
    public let catchUp: CatchUp
    /// The dispatcher whose stores are replicated.
    let dispatcher: Dispatcher
    /// The replicated stores' identifiers.
    let storeIdentifiers: [String]
    let connection: NATSConnection
    let applier: Applier
    let publisher: AsyncPublisher
    let guardian: ReplicationGuard
    let storesByActionType: [ObjectIdentifier: [String]]
    let counter = Locked<UInt64>(0)
    /// The start of this replica's message ids: its name and a random part of its own, so that a
    /// replica started again under the same name never repeats an id within the stream's duplicate
    /// window (the stream would store the new action as a repeat of the old, that is not at all).
    let messagePrefix: String
    let closed = Locked(false)

    /// Connects to the stream (creating it and the snapshots' bucket when they do not exist),
    /// brings the stores to the stream's end and starts applying what other replicas append.
    ///
    /// The stores are set from the latest valid snapshot, then the messages after it are applied;
    /// ``catchUp`` says how many and how long it took. From then on the stores refuse changes that
    /// do not come from the stream.
    ///
    /// - Parameters:
    ///   - dispatcher: The dispatcher the stores are registered with.
    ///   - stores: The stores to replicate: registered, with `Codable` states and actions whose types
    ///     have stable names (``StablyNamed``), and nothing applied yet.
    ///   - configuration: The stream and how to use it.
    ///   - onApply: Called after each message is applied here, on the replica's thread, before the
    ///     tasks waiting for that message (its perform, ``waitUntilApplied(through:timeout:)``) resume.
    ///   - onError: Called with each problem while running: a dispatch refused
    ///     (``ReplicationError/Code/changeOutsideStream``), a snapshot not written, the failure that
    ///     stopped the replica; on the thread that met it.
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/invalidSetup`` naming the store,
    ///   ``ReplicationError/Code/unavailable`` naming the servers when none is reachable or the stream
    ///   cannot be used, ``ReplicationError/Code/gap`` when the stream no longer holds messages that no
    ///   snapshot covers, ``ReplicationError/Code/snapshot`` for a snapshot of a newer format.
    public init(
        dispatcher: Dispatcher,
        stores: [any AnyStore],
        configuration: Configuration,
        onApply: (@Sendable (AppliedMessage) -> Void)? = nil,
        onError: (@Sendable (ReplicationError) -> Void)? = nil
    ) async throws(ReplicationError) {
        let started = ContinuousClock.now
        let stream = configuration.stream
        let setup = try Setup(dispatcher: dispatcher, stores: stores, configuration: configuration)
        self.configuration = configuration
        self.dispatcher = dispatcher
        storeIdentifiers = setup.identifiers
        storesByActionType = setup.storesByActionType
        let messagePrefix = "\(configuration.replicaName).\(UUID().uuidString.prefix(8).lowercased())."
        self.messagePrefix = messagePrefix
        let connection: NATSConnection
        var options = configuration.connection
        options.name = options.name ?? "DispatchStore replica \(configuration.replicaName) of \(stream)"
        options.credentials = configuration.credentials
        options.tls = configuration.tls
        do {
            connection = try await NATSConnection.connect(to: configuration.servers, options: options)
        } catch {
            throw Self.cannotStart(stream, error)
        }
        self.connection = connection
        let problems = Locked<[ReplicationError]>([])
        do throws(ReplicationError) {
            // A cluster that just started may not have placed every server yet: transient errors are
            // tried again until the configuration's timeout.
            let deadline = ContinuousClock.now + configuration.timeout
            let (info, bucket) = try await Self.openStream(configuration, on: connection, until: deadline)
            let snapshots = SnapshotStore(
                bucket: bucket,
                stream: stream,
                chunkSize: max(1_024, connection.maximumPayload - 4_096)
            )
            let loader = SnapshotLoader(
                snapshots: snapshots,
                dispatcher: dispatcher,
                replicated: setup.identifiers,
                migrations: configuration.migrations,
                onProblem: { problem in problems.withLock { $0.append(problem) } }
            )
            var loaded: (sequence: UInt64, contents: Journal.SnapshotContents)?
            while configuration.startsFromSnapshot {
                do {
                    loaded = try await loader.latest()
                    break
                } catch {
                    guard let natsError = error.natsError, natsError.isTransient, ContinuousClock.now < deadline else {
                        throw error
                    }
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            let base = loaded?.sequence ?? 0
            if info.messages > 0 || info.lastSequence > base, base + 1 < info.firstSequence {
                throw ReplicationError(
                    .gap,
                    stream: stream,
                    sequence: base + 1,
                    message: "stream \(stream) no longer holds messages \(base + 1) to \(info.firstSequence - 1) "
                        + "(its limits discarded them), and "
                        + (loaded.map { "the latest snapshot covers up to message \($0.sequence)" }
                            ?? (configuration.startsFromSnapshot
                                ? "no snapshot is readable" : "snapshots were not to be used"))
                        + "; the replica cannot catch up"
                )
            }
            let guardian = ReplicationGuard(
                replicated: Set(setup.identifiers),
                replicatedTypes: Set(setup.storesByActionType.keys),
                stream: stream,
                onRefusal: { error in onError?(error) }
            )
            self.guardian = guardian
            let reason = "it is replicated through the NATS stream \(stream); change it with Replication.perform(_:)"
            for store in setup.stores {
                store.outsideChangeRefusal = "store '\(store.identifier)' \(reason)"
            }
            dispatcher.register(middleware: guardian)
            loaded?.contents.restore()
            applier = Applier(
                context: Applier.Context(
                    stream: stream,
                    subject: configuration.subject,
                    ownPrefix: messagePrefix,
                    dispatcher: dispatcher,
                    replicated: setup.identifiers,
                    guardian: guardian,
                    connection: connection,
                    snapshots: snapshots,
                    snapshotEvery: configuration.snapshotEvery,
                    migrations: configuration.migrations,
                    onApply: onApply,
                    onError: onError
                ),
                applied: base,
                streamEnd: info.lastSequence,
                decoder: setup.decoder
            )
            do throws(ReplicationError) {
                do {
                    publisher = try AsyncPublisher(handle: connection.handle) { [applier] messageID, result in
                        applier.acknowledged(messageID, result)
                    }
                } catch {
                    throw ReplicationError(
                        .unavailable,
                        stream: stream,
                        natsError: error,
                        message: "\(clause(of: error))"
                    )
                }
                try await applier.start(until: deadline)
                try await applier.waitUntilApplied(through: info.lastSequence, deadline: nil)
            } catch {
                let applier = applier
                _ = try? await BlockingCalls.run { () throws(NATSError) in applier.stop(because: error) }
                dispatcher.unregister(middleware: guardian)
                for store in setup.stores {
                    store.outsideChangeRefusal = nil
                }
                throw error
            }
            catchUp = CatchUp(
                snapshotSequence: loaded?.sequence,
                caughtUp: applier.counts.applied,
                lastSequence: applier.applied,
                duration: ContinuousClock.now - started,
                problems: problems.withLock { $0 },
                streamReplicas: info.replicas
            )
        } catch {
            await connection.close()
            throw error
        }
    }
}
