import DispatchStore
import DispatchStoreJournal
import Foundation

/// A replica's applier: one thread of its own that reads the stream from where the stores are and
/// applies each message, in stream order, with a `.sync` dispatch, then hands the result to the
/// task waiting for it (``Replication/perform(_:timeout:)``) and to those waiting for a sequence
/// number.
///
/// It never skips a message: a sequence number it has seen is skipped as a repeat; a gap is filled
/// by reading again from the first missing message, or by a snapshot when the stream's limits
/// discarded the missing ones, or it stops with an error naming the gap. A message it cannot read
/// stops it too.
final class Applier: @unchecked Sendable {
    // @unchecked: `shared` is only touched while holding `lock`; `consumer`, `decoder` and
    // `appliedHere` only by the applier thread once `start` handed them over.

    /// What ends one attempt of a perform: its message applied here, its append failed (try again),
    /// or the perform failed.
    enum Attempt {
        case applied(Replication.Outcome)
        case appendFailed(NATSError)
        case failed(ReplicationError)
    }

    typealias AttemptWaiter = CheckedContinuation<Attempt, Never>
    typealias SequenceWaiter = CheckedContinuation<Result<UInt64, ReplicationError>, Never>

    /// What the applier works with, fixed when the replication starts.
    struct Context: Sendable {
        let stream: String
        let subject: String
        /// The prefix of this replica's message ids: `<replica id>.`.
        let ownPrefix: String
        let dispatcher: Dispatcher
        /// The replicated stores, in the order they were given.
        let replicated: [String]
        let guardian: ReplicationGuard
        let connection: NATSConnection
        /// Where snapshots are read from (to fill a gap), and written to every ``snapshotEvery`` messages.
        let snapshots: SnapshotStore?
        let snapshotEvery: Int?
        let migrations: [StateMigration]
        let onApply: (@Sendable (Replication.AppliedMessage) -> Void)?
        let onError: (@Sendable (ReplicationError) -> Void)?
    }

    /// A perform's message, by its id.
    private enum Pending {
        /// Registered, between two attempts; the sequence number the stream acknowledged, if known.
        case expected(sequence: UInt64?)
        /// An attempt waits: for the message to be applied here, or for its append to fail.
        case waiting(sequence: UInt64?, deadline: ContinuousClock.Instant, waiter: AttemptWaiter)
        /// Applied while no attempt waited.
        case applied(Replication.Outcome)
    }

    private struct Shared {
        var applied: UInt64
        var appliedCount = 0
        var repeatsSkipped = 0
        var snapshotsLoaded = 0
        var failure: ReplicationError?
        var stopping = false
        /// Whether the thread started, and whether it ended.
        var started = false
        var finished = false
        /// Read the stream again from this sequence number (as tests ask, or after a stall).
        var restartFrom: UInt64?
        /// When the reader last got a message, or last checked the stream's end after a silence.
        var lastDelivery = ContinuousClock.now
        /// Whether a check of the stream's end is under way, and how many stalls it ended.
        var checkingEnd = false
        var stallsEnded = 0
        /// Told when the stream read again reached this message once more.
        var rereadWaiter: (through: UInt64, waiter: CheckedContinuation<Void, Never>)?
        var pending: [String: Pending] = [:]
        var sequenceWaiters:
            [(id: UInt64, target: UInt64, deadline: ContinuousClock.Instant?, waiter: SequenceWaiter)] =
                []
        var nextWaiterID: UInt64 = 0
    }

    let context: Context
    private let lock = SpinningLock()
    private var shared: Shared
    private var consumer: OrderedConsumer?
    private var decoder: ActionLog.RecordDecoder
    /// The applier thread's copy of `shared.applied`, which only that thread changes: read without
    /// the lock.
    private var appliedHere: UInt64
    /// The result of the dispatch ``apply(_:)`` makes, set by its completion before `dispatch` returns.
    private var lastResult: DispatchResult?
    private let finished = DispatchSemaphore(value: 0)
    private let snapshotWriter: SnapshotWriter?

    init(context: Context, applied: UInt64, decoder: ActionLog.RecordDecoder) {
        self.context = context
        self.decoder = decoder
        shared = Shared(applied: applied)
        appliedHere = applied
        snapshotWriter =
            context.snapshotEvery == nil
            ? nil
            : context.snapshots.map {
                SnapshotWriter(store: $0, writer: context.ownPrefix, onError: context.onError)
            }
    }

    // MARK: Running

    /// Starts the thread, reading from the message after `applied`.
    ///
    /// - Parameter deadline: Until when a transient failure to make the consumer is tried again.
    /// - Throws: ``ReplicationError`` when the stream cannot be read.
    func start(until deadline: ContinuousClock.Instant) async throws(ReplicationError) {
        let start = applied + 1
        let context = context
        do {
            let consumer = try await retryingTransient(until: deadline) { () async throws(NATSError) in
                try await BlockingCalls.run { () throws(NATSError) in
                    try OrderedConsumer(
                        handle: context.connection.handle,
                        stream: context.stream,
                        subject: context.subject,
                        startSequence: start
                    )
                }
            }
            self.consumer = consumer
        } catch {
            throw unavailable(error, "cannot read stream \(context.stream) from message \(start)")
        }
        let thread = Thread { [self] in run() }
        thread.name = "DispatchStoreNATS applier (\(context.stream))"
        withShared { $0.started = true }
        thread.start()
    }

    /// Stops the thread and fails every waiting task with `error`.
    ///
    /// Returns once the thread ended. Blocks: call it off the cooperative pool.
    func stop(because error: ReplicationError) {
        let wasRunning = withShared { shared -> Bool in
            shared.stopping = true
            return shared.started && !shared.finished
        }
        if wasRunning { finished.wait() }
        failWaiters(error)
        snapshotWriter?.waitUntilIdle()
    }

    /// The sequence number of the last message applied.
    var applied: UInt64 {
        withShared { $0.applied }
    }

    /// The failure that stopped the applier, if one did.
    var failure: ReplicationError? {
        withShared { $0.failure }
    }

    /// The sequence numbers of the snapshots this replica wrote (made the latest), oldest first.
    var snapshotsWritten: [UInt64] {
        snapshotWriter?.written ?? []
    }

    /// Returns once no snapshot is being written or waiting to be.
    func waitForSnapshots() async {
        guard let snapshotWriter else { return }
        _ = try? await BlockingCalls.run { () throws(NATSError) in snapshotWriter.waitUntilIdle() }
    }

    /// How many messages were applied from the stream since the replication started, how many
    /// repeats were skipped, and how many snapshots were loaded to fill a gap.
    var counts: (applied: Int, repeatsSkipped: Int, snapshotsLoaded: Int, stallsEnded: Int) {
        withShared { ($0.appliedCount, $0.repeatsSkipped, $0.snapshotsLoaded, $0.stallsEnded) }
    }

    /// Reads the stream again from `sequence`, as after a reconnect that delivers messages again (the
    /// tests' redelivery), and returns once the messages applied before were delivered again (and
    /// skipped); at once when there are none.
    func readAgain(from sequence: UInt64) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let immediate = withShared { shared -> Bool in
                guard shared.failure == nil, !shared.stopping else { return true }
                shared.restartFrom = sequence
                guard sequence <= shared.applied else { return true }
                shared.rereadWaiter = (shared.applied, waiter)
                return false
            }
            if immediate { waiter.resume() }
        }
    }

    // MARK: Waiting

    /// Forgets a registered message id: its perform gave up.
    func forget(_ messageID: String) {
        withShared { _ = $0.pending.removeValue(forKey: messageID) }
    }

    /// Runs one attempt of a perform: registers the wait, calls `send` (which publishes the
    /// message), and returns what ends the attempt.
    ///
    /// The first attempt registers the message id, before the message is published, so that its
    /// outcome is kept when it is applied before the perform asks for it (between two attempts: an
    /// append that timed out was stored after all). A later attempt then returns at once, without
    /// sending again.
    ///
    /// - Returns: ``Attempt/applied(_:)`` with its outcome once the message is applied here;
    ///   ``Attempt/appendFailed(_:)`` when the stream did not take this append (the perform tries
    ///   again); ``Attempt/failed(_:)`` at `deadline`, on cancellation, or with the applier's failure.
    func attempt(
        _ messageID: String,
        first: Bool,
        deadline: ContinuousClock.Instant,
        send: () -> Void
    ) async -> Attempt {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: AttemptWaiter) in
                let immediate = withShared { shared -> Attempt? in
                    let pending = shared.pending[messageID] ?? (first ? .expected(sequence: nil) : nil)
                    switch pending {
                    case .applied(let outcome):
                        shared.pending[messageID] = nil
                        return .applied(outcome)
                    case .expected(let sequence) where shared.failure == nil && !shared.stopping:
                        // Checked under the lock that the cancellation handler takes: none is missed.
                        if Task.isCancelled {
                            shared.pending[messageID] = nil
                            return .failed(cancelledError(messageID, sequence))
                        }
                        shared.pending[messageID] = .waiting(sequence: sequence, deadline: deadline, waiter: waiter)
                        return nil
                    default:
                        shared.pending[messageID] = nil
                        return .failed(shared.failure ?? stoppedError())
                    }
                }
                if let immediate {
                    waiter.resume(returning: immediate)
                } else {
                    send()
                }
            }
        } onCancel: {
            let ended = withShared { shared -> (AttemptWaiter, UInt64?)? in
                guard case .waiting(let sequence, _, let waiter) = shared.pending[messageID] else { return nil }
                shared.pending[messageID] = nil
                return (waiter, sequence)
            }
            if let (waiter, sequence) = ended {
                waiter.resume(returning: .failed(cancelledError(messageID, sequence)))
            }
        }
    }

    /// Hears of the stream's acknowledgement of a perform's append, or of its failure.
    func acknowledged(_ messageID: String, _ result: Result<PublishAck, NATSError>) {
        let ended = withShared { shared -> (AttemptWaiter, Attempt)? in
            switch (shared.pending[messageID], result) {
            case (.expected, .success(let ack)):
                shared.pending[messageID] = .expected(sequence: ack.sequence)
            case (.waiting(_, let deadline, let waiter), .success(let ack)):
                guard ack.sequence <= shared.applied else {
                    shared.pending[messageID] = .waiting(sequence: ack.sequence, deadline: deadline, waiter: waiter)
                    return nil
                }
                // Applied, but not by a dispatch here: a snapshot loaded after a gap covered it.
                shared.pending[messageID] = nil
                return (waiter, .failed(coveredError(messageID, ack.sequence)))
            case (.waiting(let sequence, _, let waiter), .failure(let error)):
                shared.pending[messageID] = .expected(sequence: sequence)
                return (waiter, .appendFailed(error))
            default:
                break
            }
            return nil
        }
        if let (waiter, attempt) = ended { waiter.resume(returning: attempt) }
    }

    /// Waits until the message `target` (and every one before it) is applied here.
    ///
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/timedOut`` at `deadline`,
    ///   ``ReplicationError/Code/cancelled``, or the applier's failure.
    func waitUntilApplied(through target: UInt64, deadline: ContinuousClock.Instant?) async throws(ReplicationError) {
        let token = Locked<UInt64?>(nil)
        let result: Result<UInt64, ReplicationError> = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: SequenceWaiter) in
                let immediate = withShared { shared -> Result<UInt64, ReplicationError>? in
                    if shared.applied >= target { return .success(shared.applied) }
                    if let failure = shared.failure { return .failure(failure) }
                    if shared.stopping { return .failure(stoppedError()) }
                    // Checked under the lock that the cancellation handler takes: no cancellation is missed.
                    if Task.isCancelled { return .failure(cancelledError(target, "message \(target)")) }
                    shared.nextWaiterID += 1
                    let id = shared.nextWaiterID
                    shared.sequenceWaiters.append((id, target, deadline, waiter))
                    token.withLock { $0 = id }
                    return nil
                }
                if let immediate { waiter.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = withShared { shared -> SequenceWaiter? in
                guard let id = token.withLock({ $0 }),
                    let index = shared.sequenceWaiters.firstIndex(where: { $0.id == id })
                else { return nil }
                return shared.sequenceWaiters.remove(at: index).waiter
            }
            waiter?.resume(returning: .failure(cancelledError(target, "message \(target)")))
        }
        _ = try result.get()
    }

    // MARK: The thread

    private func run() {
        defer {
            consumer?.close()
            withShared { $0.finished = true }
            finished.signal()
        }
        var nextSweep = ContinuousClock.now
        var delivered = false
        while true {
            let (stopping, restart) = withShared { shared -> (Bool, UInt64?) in
                defer { shared.restartFrom = nil }
                if delivered { shared.lastDelivery = ContinuousClock.now }
                return (shared.stopping || shared.failure != nil, shared.restartFrom)
            }
            if stopping { return }
            if ContinuousClock.now >= nextSweep {
                sweepDeadlines()
                nextSweep = ContinuousClock.now + .milliseconds(50)
            }
            do throws(ReplicationError) {
                if let restart { try restartConsumer(from: restart) }
                guard let message = try nextMessage() else {
                    delivered = false
                    checkForStall()
                    continue
                }
                delivered = true
                try handle(message)
            } catch {
                fail(error)
                return
            }
        }
    }

    /// After five seconds without a message, asks the stream where it ends, off this thread; when it
    /// holds messages this replica has not applied, the reader starts again from the first of them.
    ///
    /// nats.c makes an ordered consumer again when it misses its heartbeats, but a consumer made
    /// while the servers were still sorting themselves out (one back from a pause) was seen to stay
    /// silent; this does not depend on it.
    private func checkForStall() {
        let now = ContinuousClock.now
        let due = withShared { shared -> Bool in
            guard !shared.checkingEnd, now - shared.lastDelivery >= .seconds(5) else { return false }
            shared.checkingEnd = true
            return true
        }
        guard due else { return }
        let context = context
        Task { [self] in
            let end = try? await context.connection.streamInfo(context.stream).lastSequence
            withShared { shared in
                shared.checkingEnd = false
                shared.lastDelivery = ContinuousClock.now
                if let end, end > shared.applied, shared.restartFrom == nil {
                    shared.restartFrom = shared.applied + 1
                    shared.stallsEnded += 1
                }
            }
        }
    }

    private func nextMessage() throws(ReplicationError) -> DeliveredMessage? {
        guard let consumer else {
            // No consumer until the servers can make one: wait a little before trying again.
            Thread.sleep(forTimeInterval: 0.1)
            return nil
        }
        do {
            return try consumer.next(timeout: .milliseconds(50))
        } catch {
            if withShared({ $0.stopping }) { return nil }
            throw unavailable(error, "cannot read stream \(context.stream)")
        }
    }

    private func handle(_ message: DeliveredMessage) throws(ReplicationError) {
        var expected = appliedHere + 1
        if message.sequence < expected {
            let reread = withShared { shared -> CheckedContinuation<Void, Never>? in
                shared.repeatsSkipped += 1
                guard let waiting = shared.rereadWaiter, waiting.through == message.sequence else { return nil }
                shared.rereadWaiter = nil
                return waiting.waiter
            }
            reread?.resume()
            return
        }
        if message.sequence > expected {
            try fillGap(from: expected, found: message.sequence)
            expected = appliedHere + 1
            // Read again from the first missing message; this one comes again in its turn.
            guard message.sequence == expected else { return }
        }
        let entry: ActionLog.Entry
        do {
            entry = try decoder.entry(from: message.data, number: Int(message.sequence))
        } catch {
            throw ReplicationError(
                .unreadableMessage,
                stream: context.stream,
                sequence: message.sequence,
                message:
                    "message \(message.sequence) of stream \(context.stream) cannot be applied: \(clause(error.message)); "
                    + "this replica stopped before it rather than skip it"
            )
        }
        let result = apply(entry.action)
        try check(result, sequence: message.sequence)
        let isOwn = message.messageID?.hasPrefix(context.ownPrefix) ?? false
        // Before anyone hears of the message: a perform that returns finds its snapshot under way.
        if let every = context.snapshotEvery, isOwn, message.sequence % UInt64(every) == 0 {
            takeSnapshot(at: message.sequence)
        }
        // Before the waiting tasks hear of the message: once a wait for it ends, so did this call.
        context.onApply?(
            Replication.AppliedMessage(
                sequence: message.sequence,
                result: result,
                messageID: message.messageID,
                isOwn: isOwn,
                storedAt: Date(timeIntervalSince1970: Double(message.timestamp) / 1e9)
            )
        )
        let outcome = Replication.Outcome(result: result, sequence: message.sequence)
        let (waiter, ready) = withShared { shared -> (AttemptWaiter?, [SequenceWaiter]) in
            shared.applied = message.sequence
            shared.appliedCount += 1
            appliedHere = message.sequence
            var waiter: AttemptWaiter?
            if isOwn, let id = message.messageID, let pending = shared.pending[id] {
                switch pending {
                case .expected:
                    shared.pending[id] = .applied(outcome)
                case .waiting(_, _, let found):
                    shared.pending[id] = nil
                    waiter = found
                case .applied:
                    break
                }
            }
            return (waiter, takeReadyWaiters(&shared))
        }
        waiter?.resume(returning: .applied(outcome))
        for ready in ready {
            ready.resume(returning: .success(message.sequence))
        }
    }

    /// Dispatches `action` `.sync`, admitted by the guard, and returns its result.
    private func apply(_ action: any ActionType) -> DispatchResult {
        func open<Action: ActionType>(_ action: Action) {
            context.guardian.admit(Action.self)
            defer { context.guardian.endAdmission() }
            context.dispatcher.dispatch(action, mode: .sync) { [unowned self] result in lastResult = result }
        }
        open(action)
        // `.sync` runs the completion before `dispatch` returns (this thread waits for it).
        defer { lastResult = nil }
        return lastResult!
    }

    /// Stops the replica when a replicated store did not apply the message: it would no longer hold
    /// what the other replicas hold.
    private func check(_ result: DispatchResult, sequence: UInt64) throws(ReplicationError) {
        if let error = result.error {
            throw ReplicationError(
                .stopped,
                stream: context.stream,
                sequence: sequence,
                message:
                    "message \(sequence) of stream \(context.stream) could not be applied: \(clause(error.message)); "
                    + "this replica stopped"
            )
        }
        for outcome in result.outcomes where context.replicated.contains(outcome.storeIdentifier) {
            if outcome.sequenceNumber == nil {
                throw ReplicationError(
                    .stopped,
                    stream: context.stream,
                    storeIdentifier: outcome.storeIdentifier,
                    sequence: sequence,
                    message: "store '\(outcome.storeIdentifier)' did not apply message \(sequence) of stream "
                        + "\(context.stream) (\(outcome.status)); this replica stopped, since its state would differ "
                        + "from the other replicas'"
                )
            }
        }
    }

    // MARK: Gaps

    /// Deals with a message after a gap: reads again from the first missing message when the stream
    /// still holds it, loads a snapshot when its limits discarded it, or throws.
    private func fillGap(from expected: UInt64, found: UInt64) throws(ReplicationError) {
        let info: StreamInfo
        do {
            info = try blocking { [context] () async throws(NATSError) in
                try await context.connection.streamInfo(context.stream)
            }
        } catch {
            throw unavailable(
                error,
                "cannot read the state of stream \(context.stream) after a gap before message \(found)"
            )
        }
        if info.firstSequence <= expected {
            // The missing messages are there: read them again (a consumer that lost some).
            let missing: StreamMessage?
            do {
                missing = try blocking { [context] () async throws(NATSError) in
                    try await context.connection.message(in: context.stream, sequence: expected)
                }
            } catch {
                throw unavailable(error, "cannot read message \(expected) of stream \(context.stream)")
            }
            guard missing != nil else {
                throw gapError(expected, found - 1, "they were deleted from the stream")
            }
            try restartConsumer(from: expected)
            return
        }
        // The stream's limits discarded messages from `expected` on: a snapshot must cover them.
        guard let snapshots = context.snapshots else {
            throw gapError(expected, info.firstSequence - 1, "the stream's limits discarded them")
        }
        let loader = SnapshotLoader(
            snapshots: snapshots,
            dispatcher: context.dispatcher,
            replicated: context.replicated,
            migrations: context.migrations,
            onProblem: context.onError
        )
        let loaded = try blocking { () async throws(ReplicationError) in try await loader.latest() }
        guard let loaded, loaded.sequence + 1 >= info.firstSequence, loaded.sequence >= expected else {
            throw gapError(
                expected,
                info.firstSequence - 1,
                "the stream's limits discarded them and "
                    + (loaded.map { "the latest snapshot covers only up to message \($0.sequence)" }
                        ?? "no snapshot is readable")
            )
        }
        loaded.contents.restore()
        let (reread, ready) = withShared { shared -> (CheckedContinuation<Void, Never>?, [SequenceWaiter]) in
            shared.applied = loaded.sequence
            shared.snapshotsLoaded += 1
            appliedHere = loaded.sequence
            defer { shared.rereadWaiter = nil }
            return (shared.rereadWaiter?.waiter, takeReadyWaiters(&shared))
        }
        reread?.resume()
        for waiter in ready {
            waiter.resume(returning: .success(loaded.sequence))
        }
        try restartConsumer(from: loaded.sequence + 1)
    }

    /// Reads the stream again from `sequence` with a new consumer.
    ///
    /// When the servers cannot make one now (a leader being elected, a server back from a pause),
    /// it is tried again on a later turn of the loop.
    ///
    /// - Throws: ``ReplicationError/Code/unavailable`` for any other failure.
    private func restartConsumer(from sequence: UInt64) throws(ReplicationError) {
        consumer?.close()
        consumer = nil
        do {
            consumer = try OrderedConsumer(
                handle: context.connection.handle,
                stream: context.stream,
                subject: context.subject,
                startSequence: sequence
            )
        } catch {
            guard error.isTransient else {
                throw unavailable(error, "cannot read stream \(context.stream) from message \(sequence)")
            }
            withShared { shared in
                if shared.restartFrom == nil { shared.restartFrom = sequence }
            }
        }
    }

    private func gapError(_ first: UInt64, _ last: UInt64, _ why: String) -> ReplicationError {
        ReplicationError(
            .gap,
            stream: context.stream,
            sequence: first,
            message: "stream \(context.stream) no longer holds message"
                + (first == last ? " \(first)" : "s \(first) to \(last)")
                + " that this replica needs (\(why)); it stopped after message \(first - 1) rather than skip "
                + (first == last ? "it" : "them")
        )
    }

    // MARK: Snapshots

    private func takeSnapshot(at sequence: UInt64) {
        guard let snapshotWriter, let snapshots = context.snapshots else { return }
        do {
            let data = try Journal.encodeSnapshot(
                of: context.dispatcher,
                storeIdentifiers: context.replicated,
                position: sequence,
                destination: snapshots.name(sequence)
            )
            snapshotWriter.submit(data, sequence: sequence)
        } catch {
            context.onError?(
                ReplicationError(
                    .snapshot,
                    stream: context.stream,
                    storeIdentifier: error.storeIdentifier,
                    sequence: sequence,
                    message: "no snapshot was taken after message \(sequence): \(clause(error.message))"
                )
            )
        }
    }

    // MARK: Failing

    private func fail(_ error: ReplicationError) {
        let first = withShared { shared -> Bool in
            guard shared.failure == nil, !shared.stopping else { return false }
            shared.failure = error
            return true
        }
        guard first else { return }
        // `onError` hears of it before the waiting tasks fail.
        context.onError?(error)
        failWaiters(error)
    }

    private func failWaiters(_ error: ReplicationError) {
        let (outcomes, sequences) = withShared { shared -> ([AttemptWaiter], [SequenceWaiter]) in
            var outcomes: [AttemptWaiter] = []
            for (id, pending) in shared.pending {
                if case .waiting(_, _, let waiter) = pending {
                    outcomes.append(waiter)
                    shared.pending[id] = nil
                }
            }
            let sequences = shared.sequenceWaiters.map(\.waiter)
            shared.sequenceWaiters = []
            shared.rereadWaiter?.waiter.resume()
            shared.rereadWaiter = nil
            return (outcomes, sequences)
        }
        for waiter in outcomes {
            waiter.resume(returning: .failed(error))
        }
        for waiter in sequences {
            waiter.resume(returning: .failure(error))
        }
    }

    /// Resumes the waiting tasks whose deadline passed with ``ReplicationError/Code/timedOut``.
    private func sweepDeadlines() {
        let now = ContinuousClock.now
        let (outcomes, sequences, applied) = withShared {
            shared -> ([(String, UInt64?, AttemptWaiter)], [(UInt64, SequenceWaiter)], UInt64) in
            var outcomes: [(String, UInt64?, AttemptWaiter)] = []
            for (id, pending) in shared.pending {
                if case .waiting(let sequence, let deadline, let waiter) = pending, deadline <= now {
                    outcomes.append((id, sequence, waiter))
                    shared.pending[id] = nil
                }
            }
            var sequences: [(UInt64, SequenceWaiter)] = []
            shared.sequenceWaiters.removeAll { item in
                guard let deadline = item.deadline, deadline <= now else { return false }
                sequences.append((item.target, item.waiter))
                return true
            }
            return (outcomes, sequences, shared.applied)
        }
        for (id, sequence, waiter) in outcomes {
            let message =
                sequence.map { sequence in
                    "message \(id) was stored as number \(sequence) of stream \(context.stream) but not applied here in "
                        + "time (this replica has applied up to \(applied)); every replica, this one included, applies "
                        + "it when it gets there"
                }
                ?? "message \(id) was not acknowledged by stream \(context.stream) in time (connection: "
                + "\(context.connection.state)); it may still be stored, and then every replica applies it"
            waiter.resume(
                returning: .failed(
                    ReplicationError(.timedOut, stream: context.stream, sequence: sequence, message: message)
                )
            )
        }
        for (target, waiter) in sequences {
            waiter.resume(
                returning: .failure(
                    ReplicationError(
                        .timedOut,
                        stream: context.stream,
                        sequence: target,
                        message: "this replica had applied stream \(context.stream) up to message \(applied), not yet "
                            + "\(target), when the time ran out"
                    )
                )
            )
        }
    }

    // MARK: Helpers

    private func takeReadyWaiters(_ shared: inout Shared) -> [SequenceWaiter] {
        guard !shared.sequenceWaiters.isEmpty else { return [] }
        var ready: [SequenceWaiter] = []
        shared.sequenceWaiters.removeAll { item in
            guard item.target <= shared.applied else { return false }
            ready.append(item.waiter)
            return true
        }
        return ready
    }

    private func withShared<Result>(_ body: (inout Shared) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&shared) }
    }

    private func stoppedError() -> ReplicationError {
        ReplicationError(
            .stopped,
            stream: context.stream,
            message: "the replica of stream \(context.stream) was closed"
        )
    }

    private func cancelledError(_ sequence: UInt64, _ what: String) -> ReplicationError {
        ReplicationError(
            .cancelled,
            stream: context.stream,
            sequence: sequence,
            message: "the task waiting for \(what) (number \(sequence) of stream \(context.stream)) to be applied was "
                + "cancelled; the message is in the stream, and every replica applies it"
        )
    }

    private func cancelledError(_ messageID: String, _ sequence: UInt64?) -> ReplicationError {
        guard let sequence else {
            return ReplicationError(
                .cancelled,
                stream: context.stream,
                message: "the task performing message \(messageID) was cancelled before stream \(context.stream) "
                    + "acknowledged it; it may still be stored, and then every replica applies it"
            )
        }
        return cancelledError(sequence, "message \(messageID)")
    }

    private func coveredError(_ messageID: String, _ sequence: UInt64) -> ReplicationError {
        ReplicationError(
            .stopped,
            stream: context.stream,
            sequence: sequence,
            message: "message \(messageID) (number \(sequence) of stream \(context.stream)) was applied here through "
                + "a snapshot loaded after a gap, so its result is not known"
        )
    }

    private func unavailable(_ error: NATSError, _ what: String) -> ReplicationError {
        ReplicationError(
            .unavailable,
            stream: context.stream,
            natsError: error,
            message: "\(what): \(clause(of: error))"
        )
    }

    /// Runs async work from the applier thread, which waits for it (it is not a thread of the
    /// cooperative pool).
    private func blocking<Result: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () async throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let box = Locked<Swift.Result<Result, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Swift.Result<Result, Failure>
            do throws(Failure) {
                outcome = .success(try await body())
            } catch {
                outcome = .failure(error)
            }
            box.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0 }!.get()
    }
}
