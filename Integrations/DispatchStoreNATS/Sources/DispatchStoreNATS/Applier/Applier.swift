import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

/// A replica's applier: its ``ApplierMachine`` behind a lock, one driver thread that reads the
/// stream and applies each message in stream order, and the calls through which performs, their
/// acknowledgements and waiting tasks feed the machine.
///
/// Every call takes the lock, feeds the machine one event, and carries out what it returns outside
/// the lock: resuming waiters, sending a message, setting the deadline timer, waking the driver.
/// No wait polls: a perform's attempt ends when its message is applied, its append fails, its task
/// is cancelled or its deadline's timer fires; the driver sleeps until a delivery, a stop, or the
/// time it was told (a reader to open again, a quiet stream to check).
final class Applier: @unchecked Sendable {
    // @unchecked: `machine`, `inbox` and `lagListeners` are only touched holding `lock`; `reader`,
    // `spareInbox`, `decoder` and `lastResult` only by the driver thread (and by `start` before the
    // thread).

    /// A task waiting on the machine.
    ///
    /// Unchecked: the machine hands each waiter out exactly once (in a resumption, or never while
    /// it waits), which its tests check; a checked continuation would cost an allocation and an
    /// atomic exchange per perform.
    typealias Waiter = UnsafeContinuation<ApplierWaitResult, Never>

    /// What the applier works with, fixed when the replication starts.
    struct Context: Sendable {
        let stream: String
        let subject: String
        /// The prefix of this replica's message ids: `<replica name>.`.
        let ownPrefix: String
        let dispatcher: Dispatcher
        /// The replicated stores, in the order they were given.
        let replicated: [String]
        let guardian: ReplicationGuard
        let connection: NATSConnection
        /// Where snapshots are read from (to fill a gap), and written to every `snapshotEvery` messages.
        let snapshots: SnapshotStore?
        let snapshotEvery: Int?
        let migrations: [StateMigration]
        let onApply: (@Sendable (Replication.AppliedMessage) -> Void)?
        let onError: (@Sendable (ReplicationError) -> Void)?
    }

    /// At most this many delivered messages wait for the driver; beyond it, the delivery thread
    /// waits, and the stream's flow control holds the rest on the server.
    static let inboxLimit = 8_192

    let context: Context
    let lock = ConditionLock()
    var machine: ApplierMachine<Waiter>
    /// Messages delivered and not yet taken by the driver, with their reader's generation.
    var inbox: [(message: DeliveredMessage, generation: Int)] = []
    var lagListeners: [UInt64: AsyncStream<Replication.Lag>.Continuation] = [:]
    var nextListener: UInt64 = 0
    /// The driver's: the reader, the decoder, the result of the dispatch being made, and an empty
    /// inbox that takes the place of the full one (so that no batch allocates one).
    var reader: StreamReader?
    var spareInbox: [(message: DeliveredMessage, generation: Int)] = []
    var decoder: ActionLog.RecordDecoder
    var lastResult: DispatchResult?
    let snapshotWriter: SnapshotWriter?
    private let timer: any DispatchSourceTimer
    private let timerQueue = DispatchQueue(label: "DispatchStoreNATS.applier.deadlines")
    private let finished = DispatchSemaphore(value: 0)
    private let started = Locked(false)

    /// An applier for stores that hold the stream's messages up to `applied`, in a stream whose last
    /// message is `streamEnd`.
    init(context: Context, applied: UInt64, streamEnd: UInt64, decoder: ActionLog.RecordDecoder) {
        self.context = context
        self.decoder = decoder
        machine = ApplierMachine(
            stream: context.stream,
            applied: applied,
            streamEnd: streamEnd,
            now: .now
        )
        snapshotWriter =
            context.snapshotEvery == nil
            ? nil
            : context.snapshots.map { SnapshotWriter(store: $0, writer: context.ownPrefix, onError: context.onError) }
        timer = DispatchSource.makeTimerSource(queue: timerQueue)
        timer.setEventHandler { [weak self] in self?.deadlinesPassed() }
        timer.activate()
    }

    deinit {
        timer.cancel()
    }

    // MARK: Starting and stopping

    /// Opens the reader from the message after the last applied, then starts the driver thread.
    ///
    /// - Parameter deadline: Until when a failure that may pass (a leader being elected) is tried
    ///   again.
    /// - Throws: ``ReplicationError/Code/unavailable`` when the stream cannot be read.
    func start(until deadline: ContinuousClock.Instant) async throws(ReplicationError) {
        while true {
            let work = lock.withLock { machine.nextWork(now: .now, hasDeliveries: false) }
            if case .wait(let until?) = work {
                // A failure that may pass, a moment ago: the machine says when to try again.
                try? await Task.sleep(until: until, clock: .continuous)
                continue
            }
            guard case .open(let from, let generation) = work else {
                preconditionFailure("DispatchStoreNATS: a new applier's first work is \(work), not opening a reader")
            }
            do {
                let reader = try await BlockingCalls.run { [self] () throws(NATSError) in
                    try makeReader(from: from, generation: generation)
                }
                self.reader = reader
                lock.withLock { machine.readerOpened(now: .now) }
                break
            } catch {
                guard error.isTransient, ContinuousClock.now < deadline else {
                    throw unavailable(error, "cannot read stream \(context.stream) from message \(from)")
                }
                lock.withLock { machine.readerFailed(now: .now) }
            }
        }
        let thread = Thread { [self] in drive() }
        thread.name = "DispatchStoreNATS applier (\(context.stream))"
        started.withLock { $0 = true }
        thread.start()
    }

    /// A reader delivering to this applier, tagged with `generation`.
    func makeReader(from sequence: UInt64, generation: Int) throws(NATSError) -> StreamReader {
        try StreamReader(
            handle: context.connection.handle,
            stream: context.stream,
            subject: context.subject,
            startSequence: sequence
        ) { [weak self] message in self?.enqueue(message, generation: generation) }
    }

    /// Stops the applier: every waiting task fails with `error` (or, when `error` is `nil`, with
    /// ``ReplicationError/Code/stopped``: the replica was closed), the driver thread ends, the
    /// reader closes, and the snapshot being written is finished.
    ///
    /// Returns once the thread ended. Blocks: call it off the cooperative pool.
    func stop(because error: ReplicationError?) {
        let resumptions = lock.withLock {
            let resumptions = error.map { machine.fail($0) } ?? machine.close()
            lock.broadcast()
            return resumptions
        }
        resume(resumptions)
        endLagListeners()
        if started.withLock({ $0 }) {
            finished.wait()
        } else {
            reader?.close()
        }
        snapshotWriter?.waitUntilIdle()
    }

    /// Stops the replica after a failure while it runs: `onError` hears of it before the waiting
    /// tasks fail.
    func fail(_ error: ReplicationError) {
        let first = lock.withLock { !machine.hasStopped }
        guard first else { return }
        context.onError?(error)
        let resumptions = lock.withLock {
            let resumptions = machine.fail(error)
            lock.broadcast()
            return resumptions
        }
        resume(resumptions)
        endLagListeners()
    }

    /// Marks the driver thread as ended.
    func driverEnded() {
        finished.signal()
    }

    // MARK: State

    /// The sequence number of the last message applied.
    var applied: UInt64 {
        lock.withLock { machine.applied }
    }

    /// The failure that stopped the applier, if one did.
    var failure: ReplicationError? {
        lock.withLock { machine.failure }
    }

    /// How far behind the stream the replica is.
    var lag: Replication.Lag {
        lock.withLock { machine.lag(now: .now) }
    }

    /// How many messages were applied from the stream since the replication started, repeats
    /// skipped, snapshots loaded to fill a gap, readers opened again after a quiet while, and
    /// messages skipped as unreadable.
    var counts: (applied: Int, repeatsSkipped: Int, snapshotsLoaded: Int, quietRestarts: Int, unreadableSkipped: Int) {
        lock.withLock {
            (
                machine.appliedCount, machine.repeatsSkipped, machine.snapshotsLoaded,
                machine.quietChecksThatRestarted, machine.unreadableSkipped
            )
        }
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

    // MARK: Feeding the machine

    /// Takes a message the reader of `generation` delivered; waits while the inbox is full.
    func enqueue(_ message: DeliveredMessage, generation: Int) {
        lock.withLock {
            while inbox.count >= Self.inboxLimit, !machine.hasStopped, machine.generation == generation {
                lock.wait(until: nil)
            }
            guard !machine.hasStopped, machine.generation == generation else { return }
            inbox.append((message, generation))
            if inbox.count == 1 { lock.broadcast() }
            // What the stream holds is known now, before the driver gets to the message.
            if machine.heard(streamEnd: message.sequence + message.pending), machine.reportsLag {
                publishLag(machine.lag(now: .now))
            }
        }
    }

    /// Feeds the machine an event, holding the lock, and resumes the waiters it returns; when the
    /// event made the machine fail (the servers disagree), `onError` hears of it first and the
    /// driver wakes to stop.
    func feed(_ event: (inout ApplierMachine<Waiter>) -> [ApplierMachine<Waiter>.Resumption]) {
        let (resumptions, failure) = lock.withLock {
            let running = !machine.hasStopped
            let resumptions = event(&machine)
            guard running, machine.hasStopped, let failure = machine.failure else {
                return (resumptions, nil as ReplicationError?)
            }
            lock.broadcast()
            return (resumptions, failure)
        }
        if let failure {
            context.onError?(failure)
            endLagListeners()
        }
        resume(resumptions)
    }

    /// Resumes each waiter with its result.
    func resume(_ resumptions: [ApplierMachine<Waiter>.Resumption]) {
        for resumption in resumptions {
            resumption.waiter.resume(returning: resumption.result)
        }
    }

    /// Resumes a waiter, if there is one.
    func resume(_ resumption: ApplierMachine<Waiter>.Resumption?) {
        resumption?.waiter.resume(returning: resumption!.result)
    }

    /// Sets the deadline timer to fire at `deadline`, if there is one.
    ///
    /// Call it holding the lock, so that two settings are made in the machine's order.
    func setTimer(_ deadline: ContinuousClock.Instant?) {
        guard let deadline else { return }
        let delay = max(.zero, deadline - .now)
        timer.schedule(deadline: .now() + .nanoseconds(Int(min(delay, .seconds(86_400)).nanoseconds)))
    }

    /// The timer fired: the waits whose deadline passed fail.
    private func deadlinesPassed() {
        let connection = context.connection.state
        let resumptions = lock.withLock {
            let (resumptions, next) = machine.expire(now: .now, connection: connection)
            setTimer(next)
            return resumptions
        }
        resume(resumptions)
    }

    /// The error for a NATS failure while doing `what`.
    func unavailable(_ error: NATSError, _ what: String) -> ReplicationError {
        ReplicationError(
            error.code == .notPermitted ? .notPermitted : .unavailable,
            stream: context.stream,
            natsError: error,
            message: "\(what): \(clause(of: error))"
        )
    }
}

extension Duration {
    /// The duration in whole nanoseconds.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
