public import DispatchStore
public import DispatchStoreJournal
public import Foundation

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
    /// Where the stream is and how a replica uses it.
    public struct Configuration: Sendable {
        /// The NATS servers' URLs.
        public var servers: [String]
        /// The stream's name (letters, digits, `-` and `_`); created when it does not exist.
        public var stream: String
        /// The subject the stream stores and replicas append to: `dispatchstore.<stream>` by default.
        public var subject: String
        /// How many servers keep the stream and the snapshots, or `nil` (the default) for three on
        /// a cluster of three servers or more, as many as the cluster has when fewer, and one on a
        /// single server.
        ///
        /// With three, the stream and the snapshots survive the loss of any one server: its
        /// replicas elect a new leader within seconds and appends go on. With one, they live on
        /// one server: while it is down, every append fails and no replica can start.
        ///
        /// The cluster's size is what the servers tell the client (the servers it was given and
        /// those it discovered), not the number of URLs given. A stream or bucket that exists with
        /// fewer replicas is raised to this number when the replica starts (JetStream copies the
        /// messages to the new servers while the stream stays in use); one with more is left as it
        /// is. When the servers refuse to raise it, the replica does not start: the error names both
        /// numbers.
        public var replicas: Int?
        /// How many messages between two snapshots, or `nil` for none.
        public var snapshotEvery: Int? = 1_000
        /// Whether a starting replica loads the latest snapshot (`true`), or applies the whole stream
        /// from its first message (`false`: for a complete action log of it; it fails with
        /// ``ReplicationError/Code/gap`` when the stream's limits discarded messages).
        public var startsFromSnapshot = true
        /// The key-value bucket of the snapshots: `<stream>-snapshots` by default.
        public var snapshotBucket: String
        /// How long ``Replication/perform(_:timeout:)`` waits, by default, for its action to be
        /// stored and applied here.
        public var timeout: Duration = .seconds(30)
        /// The most messages the stream keeps when it is created, or `nil` for no limit.
        ///
        /// Older messages are discarded. With a limit, keep `snapshotEvery` well below it, so that
        /// a replica that falls behind finds a snapshot covering what was discarded.
        public var maximumMessages: Int64?
        /// A name for this replica in message ids and in the servers' view of its connection.
        ///
        /// A random one by default; letters, digits, `-` and `_`, unique among the replicas running
        /// at once.
        public var replicaName: String
        /// How to connect to the servers.
        public var connection = NATSConnection.Options()
        /// How to upgrade states in snapshots written with an older ``VersionedState/stateVersion``.
        public var migrations: [StateMigration] = []

        /// A configuration for `stream` on `servers`, with the defaults: the stream kept by three
        /// servers (as many as the cluster has, when fewer), a snapshot every 1,000 messages, 30
        /// seconds for a perform, no limit on the stream.
        ///
        /// - Parameters:
        ///   - servers: The NATS servers' URLs.
        ///   - stream: The stream's name.
        public init(servers: [String], stream: String) {
            self.servers = servers
            self.stream = stream
            subject = "dispatchstore.\(stream)"
            snapshotBucket = "\(stream)-snapshots"
            replicaName = "r-" + UUID().uuidString.prefix(8).lowercased()
        }
    }

    /// What ``perform(_:timeout:)`` returns: the result of applying the action here, and its place in
    /// the stream.
    public struct Outcome: Sendable {
        /// The result of the `.sync` dispatch that applied the action on this replica.
        public let result: DispatchResult
        /// The action's sequence number in the stream.
        public let sequence: UInt64
    }

    /// One message a replica applied, as `onApply` hears of it.
    public struct AppliedMessage: Sendable {
        /// Its sequence number in the stream.
        public let sequence: UInt64
        /// The result of applying it here.
        public let result: DispatchResult
        /// Its message id.
        public let messageID: String?
        /// Whether this replica appended it.
        public let isOwn: Bool
        /// When the stream stored it.
        public let storedAt: Date
    }

    /// What a replica did when it started: the snapshot it loaded and the messages it applied after
    /// it, up to the stream's end.
    public struct CatchUp: Sendable, CustomStringConvertible {
        /// The sequence number the loaded snapshot covers, or `nil` when the replica started from
        /// the stores' initial states.
        public let snapshotSequence: UInt64?
        /// How many messages it applied after the snapshot.
        public let caughtUp: Int
        /// The sequence number of the last message applied: the stream's end when it started.
        public let lastSequence: UInt64
        /// How long loading and catching up took.
        public let duration: Duration
        /// Snapshots passed over because they were damaged.
        public let problems: [ReplicationError]

        /// A line such as `caught up 200 messages after snapshot 2000 in 0.041 s (stream at 2200)`.
        public var description: String {
            let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            var text = "caught up \(caughtUp) message\(caughtUp == 1 ? "" : "s")"
            text += snapshotSequence.map { " after snapshot \($0)" } ?? " from the start"
            text += " in \(String(format: "%.3f", seconds)) s (stream at \(lastSequence))"
            if !problems.isEmpty {
                text += "; passed over: " + problems.map(\.message).joined(separator: "; ")
            }
            return text
        }
    }

    /// Creates the stream and the snapshots' bucket, or opens them, with at least the replicas
    /// asked for (raising those of an existing one).
    ///
    /// - Returns: The stream's state and the bucket.
    /// - Throws: ``ReplicationError/Code/unavailable`` when the servers cannot be used,
    ///   ``ReplicationError/Code/invalidSetup`` naming both numbers when the stream or the bucket
    ///   has fewer replicas than asked and the servers refuse to raise them.
    private static func openStream(
        _ configuration: Configuration,
        on connection: NATSConnection,
        until deadline: ContinuousClock.Instant
    ) async throws(ReplicationError) -> (StreamInfo, KeyValueBucket) {
        let stream = configuration.stream
        let clusterSize = Set(connection.knownServers).count
        var replicas = configuration.replicas ?? min(3, max(1, clusterSize))
        var streamConfiguration = StreamConfiguration(
            name: stream,
            subjects: [configuration.subject],
            replicas: replicas
        )
        streamConfiguration.maximumMessages = configuration.maximumMessages
        var info: StreamInfo
        do {
            do {
                info = try await retryingTransient(until: deadline) { () async throws(NATSError) in
                    try await connection.createStream(streamConfiguration)
                }
            } catch  where configuration.replicas == nil && replicas > 1 && error.jetStreamCode == 10074 {
                // The servers the client knows of are not one cluster (several names for one server):
                // the default is what the server takes.
                replicas = 1
                streamConfiguration.replicas = 1
                info = try await retryingTransient(until: deadline) { () async throws(NATSError) in
                    try await connection.createStream(streamConfiguration)
                }
            }
        } catch {
            throw cannotStart(stream, error)
        }
        let bucketName = configuration.snapshotBucket
        let bucket: KeyValueBucket
        do {
            bucket = try await retryingTransient(until: deadline) { () async throws(NATSError) in
                try await connection.keyValueBucket(bucketName, replicas: replicas)
            }
        } catch {
            throw cannotStart(stream, error)
        }
        // "No suitable peers" passes when a server is starting, not when the cluster is too small: a
        // few seconds for it.
        let raiseDeadline = min(deadline, ContinuousClock.now + .seconds(5))
        for (name, what) in [(stream, "stream \(stream)"), ("KV_\(bucketName)", "the snapshots' bucket \(bucketName)")]
        {
            let current: StreamInfo
            do {
                current = try await retryingTransient(until: raiseDeadline) { () async throws(NATSError) in
                    try await connection.raiseReplicas(ofStream: name, to: replicas)
                }
            } catch {
                throw ReplicationError(
                    .invalidSetup,
                    stream: stream,
                    natsError: error,
                    message: "\(what) is kept by fewer servers than the \(replicas) asked for, and the servers did not "
                        + "raise it: \(clause(of: error)); set Replication.Configuration.replicas to the number it has, "
                        + "or give the cluster more servers"
                )
            }
            if name == stream { info = current }
        }
        return (info, bucket)
    }

    /// The error of a start that `error` stopped.
    private static func cannotStart(_ stream: String, _ error: NATSError) -> ReplicationError {
        ReplicationError(
            .unavailable,
            stream: stream,
            natsError: error,
            message: "cannot start the replica of stream \(stream): \(clause(of: error))"
        )
    }

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
    public let dispatcher: Dispatcher
    /// How many servers keep the stream when the replica started (at least the configuration's
    /// ``Configuration/replicas``, whose default is three on a cluster).
    public let streamReplicas: Int
    /// The replicated stores' identifiers.
    public let storeIdentifiers: [String]
    let connection: NATSConnection
    let applier: Applier
    private let publisher: AsyncPublisher
    private let guardian: ReplicationGuard
    private let storesByActionType: [ObjectIdentifier: [String]]
    private let counter = Locked<UInt64>(0)
    private let closed = Locked(false)

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
        let connection: NATSConnection
        var options = configuration.connection
        options.name = options.name ?? "DispatchStore replica \(configuration.replicaName) of \(stream)"
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
            streamReplicas = info.replicas
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
                    ownPrefix: configuration.replicaName + ".",
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
                problems: problems.withLock { $0 }
            )
        } catch {
            await connection.close()
            throw error
        }
    }

    /// Appends `action` to the stream, waits until this replica has applied it, and returns the
    /// result of applying it here with its sequence number (read-your-writes).
    ///
    /// The append is retried with the same message id when the stream does not acknowledge it
    /// (a leader being elected, a server lost), until the timeout: the stream stores it once.
    ///
    /// - Parameters:
    ///   - action: An action that a replicated store handles.
    ///   - timeout: How long to wait for the append and the application here; the configuration's
    ///     ``Configuration/timeout`` when `nil`.
    /// - Returns: The result of the `.sync` dispatch that applied it here, and its sequence number.
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/notReplicated`` when no replicated store
    ///   handles the action's type; ``ReplicationError/Code/timedOut`` when the stream did not
    ///   acknowledge it in time (it may still be stored: then every replica applies it) or this
    ///   replica did not apply it in time; ``ReplicationError/Code/unavailable`` for an append the
    ///   servers refused; ``ReplicationError/Code/cancelled`` when the task was cancelled;
    ///   ``ReplicationError/Code/stopped`` after ``close()`` or a failure.
    /// - Note: Thread-safe; any number of performs may wait at once (their appends are pipelined).
    ///   Never call it from the replica's thread (an observer, `onApply`): it would wait for itself.
    @discardableResult
    public func perform<Action: ActionType & Encodable>(
        _ action: Action,
        timeout: Duration? = nil
    ) async throws(ReplicationError) -> Outcome {
        let deadline = ContinuousClock.now + (timeout ?? configuration.timeout)
        let stream = configuration.stream
        guard let stores = storesByActionType[ObjectIdentifier(Action.self)] else {
            throw ReplicationError(
                .notReplicated,
                stream: stream,
                message: "no replicated store of stream \(stream) handles \(Action.self), so \(action) cannot be "
                    + "performed through it; dispatch it to the dispatcher instead"
            )
        }
        let number = counter.withLock { counter in
            counter += 1
            return counter
        }
        let messageID = "\(configuration.replicaName).\(number)"
        let record: Data
        do {
            record = try ActionLog.record(
                of: action,
                id: number,
                mode: .sync,
                storeIdentifiers: stores,
                destination: "stream \(stream)"
            )
        } catch {
            throw ReplicationError(.invalidSetup, stream: stream, message: error.message)
        }
        var delay = Duration.milliseconds(50)
        var first = true
        while true {
            let attempt = await applier.attempt(messageID, first: first, deadline: deadline) {
                publisher.send(
                    record,
                    to: configuration.subject,
                    messageID: messageID,
                    timeout: Self.attemptTimeout,
                    stream: stream
                )
            }
            first = false
            switch attempt {
            case .applied(let outcome):
                return outcome
            case .failed(let error):
                applier.forget(messageID)
                throw error
            case .appendFailed(let error):
                switch error.code {
                case .timeout, .noResponders, .jetStream, .other:
                    // A leader being elected, a server lost, a connection moving: the same id again,
                    // which the stream stores once.
                    try? await Task.sleep(for: min(delay, max(.zero, deadline - ContinuousClock.now)))
                    delay = min(delay * 2, .milliseconds(500))
                default:
                    applier.forget(messageID)
                    throw ReplicationError(
                        .unavailable,
                        stream: stream,
                        natsError: error,
                        message: "message \(messageID) was refused by stream \(stream): \(clause(of: error))"
                    )
                }
            }
        }
    }

    /// Waits until this replica has applied every message the stream held when it was called.
    ///
    /// The stream's end is what the server answering says: a server back from a pause may, for a
    /// moment, answer as the leader it was and report an older end (one before what this replica
    /// applied is asked for again, for up to five seconds). To wait for what another replica
    /// performed, pass its sequence number to ``waitUntilApplied(through:timeout:)``.
    ///
    /// - Parameter timeout: How long to wait, or `nil` for as long as it takes.
    /// - Returns: The sequence number of the stream's last message when it was called.
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/timedOut``,
    ///   ``ReplicationError/Code/unavailable`` when the stream's state cannot be read in time,
    ///   ``ReplicationError/Code/cancelled``, or the failure that stopped the replica.
    @discardableResult
    public func waitUntilCaughtUp(timeout: Duration? = nil) async throws(ReplicationError) -> UInt64 {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let stream = configuration.stream
        // An end before what this replica applied is an answer from a server that does not know it
        // is no longer the stream's leader: asked again for a while, then not believed.
        let staleUntil = ContinuousClock.now + .seconds(5)
        var last: NATSError?
        while true {
            do {
                let end = try await connection.streamInfo(stream).lastSequence
                let applied = applier.applied
                if end >= applied || ContinuousClock.now >= staleUntil {
                    let target = max(end, applied)
                    try await applier.waitUntilApplied(through: target, deadline: deadline)
                    return target
                }
            } catch let error as NATSError {
                last = error
            } catch let error as ReplicationError {
                throw error
            } catch {
                preconditionFailure("DispatchStoreNATS: unexpected error \(error)")
            }
            if let failure = applier.failure { throw failure }
            if let deadline, ContinuousClock.now >= deadline {
                throw ReplicationError(
                    .unavailable,
                    stream: stream,
                    natsError: last,
                    message: "cannot learn where stream \(stream) ends: \(last.map { clause(of: $0) } ?? "no answer")"
                )
            }
            try? await Task.sleep(for: .milliseconds(100))
            if Task.isCancelled {
                throw ReplicationError(.cancelled, stream: stream, message: "waiting to catch up was cancelled")
            }
        }
    }

    /// Waits until this replica has applied the message `sequence` and every one before it: for
    /// reading here what another replica performed (its ``Outcome/sequence``).
    ///
    /// - Parameters:
    ///   - sequence: A sequence number of the stream.
    ///   - timeout: How long to wait, or `nil` for as long as it takes.
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/timedOut``,
    ///   ``ReplicationError/Code/cancelled``, or the failure that stopped the replica.
    public func waitUntilApplied(through sequence: UInt64, timeout: Duration? = nil) async throws(ReplicationError) {
        try await applier.waitUntilApplied(through: sequence, deadline: timeout.map { ContinuousClock.now + $0 })
    }

    /// The sequence number of the last message applied here.
    public var appliedSequence: UInt64 {
        applier.applied
    }

    /// The problem that stopped the replica, or `nil` while it runs.
    ///
    /// A stopped replica applies nothing more and refuses performs; its stores keep refusing
    /// outside changes. Start a new ``Replication`` (after fixing the cause) to go on.
    public var failure: ReplicationError? {
        applier.failure
    }

    /// How many dispatches that reached a replicated store without going through the stream were
    /// refused.
    public var refusedDispatches: Int {
        guardian.refusedCount
    }

    /// Stops applying messages, fails the performs still waiting, and closes the connection.
    ///
    /// The stores keep the state of the last message applied and take changes from anywhere again:
    /// they are no longer replicas. Calling it again does nothing.
    public func close() async {
        guard
            closed.withLock({ closed in
                defer { closed = true }
                return !closed
            })
        else { return }
        let stream = configuration.stream
        let applier = applier
        _ = try? await BlockingCalls.run { () throws(NATSError) in
            applier.stop(
                because: ReplicationError(
                    .stopped,
                    stream: stream,
                    message: "the replica of stream \(stream) was closed"
                )
            )
        }
        dispatcher.unregister(middleware: guardian)
        for identifier in storeIdentifiers {
            dispatcher.store(with: identifier)?.outsideChangeRefusal = nil
        }
        await connection.close()
    }

    /// Runs until the task running it is cancelled, then closes the replica: the shape of
    /// swift-service-lifecycle's `Service`.
    ///
    /// - Throws: The failure that stopped the replica, if one does first (the replica is then
    ///   closed too).
    public func run() async throws {
        while !Task.isCancelled {
            if let failure {
                await close()
                throw failure
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
        await close()
    }
}

/// Runs `body` again, a little later, while it fails with a transient error and `deadline` has not
/// passed.
func retryingTransient<Result>(
    until deadline: ContinuousClock.Instant,
    _ body: () async throws(NATSError) -> Result
) async throws(NATSError) -> Result {
    while true {
        do {
            return try await body()
        } catch {
            guard error.isTransient, ContinuousClock.now < deadline else { throw error }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
