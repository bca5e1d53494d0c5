import Foundation

/// A queue of transaction runs for one mode, drained in batches by `Operation`s (its drainers).
///
/// Queueing one `Operation` per action costs microseconds; a lane instead appends the run to its
/// own FIFO and adds a drainer only when a drainer slot is free. Each slot is an `OperationQueue`
/// over its own serial dispatch queue: serial queues get a thread even when every worker of
/// libdispatch's CPU-sized pool is blocked (on Linux, a concurrent queue then waits about a second
/// for the pool to grow). The serial lane has one slot and stops while a run is suspended, which
/// keeps strict FIFO order even when operations finish later on other threads. An engine has a
/// serial lane, a concurrent lane (one drainer per processor) and a main-queue lane.
///
/// A lane keeps itself alive while it has outstanding runs, so that the work queued by a
/// dispatcher its users released still ends, each run with its one completion.
final class Lane: @unchecked Sendable {
    // @unchecked: the mutable state is in `state`, behind its lock; the rest is immutable.
    enum Kind {
        case serial
        case concurrent
        case main
    }

    struct State {
        /// The runs waiting to be driven, oldest first.
        let queue = FIFO<TransactionRun>()
        var freeSlots: [Int]
        /// Set while a serial run is suspended: nothing else may start.
        var blocked = false
        /// Set when a serial run was resumed before its drainer let go of it.
        var resumedWhileDriving = false
        /// Runs queued, running or suspended.
        var outstanding = 0
        /// Set by a cancelling shutdown: every run taken from the queue from then on is cancelled first.
        var cancelsRuns = false
        /// How many runs completed, and how many of them a shutdown cancelled, since the lane was created.
        var completedRuns = 0
        var cancelledRuns = 0
        /// Completed runs kept for reuse, so that a queued dispatch usually allocates nothing.
        ///
        /// Up to ``Lane/busySpareLimit`` while the lane is busy, so that dispatches that outpace
        /// the drainers reuse the runs of the batches before (S4, S5); cut to
        /// ``Lane/idleSpareLimit`` just before the lane becomes idle. The main lane keeps at most
        /// the idle limit.
        var spareRuns: [TransactionRun] = []
        /// How many runs the lane created: the dispatches that found no spare run.
        var createdRuns = 0
        /// The lane itself while it has outstanding runs.
        var keepAlive: Lane?
    }

    /// Keeps the fields below off the cache line of the object's header (see `Route`).
    private let padding = CacheLinePadding()
    let kind: Kind
    private let slots: [OperationQueue]
    /// The slots' underlying queues, retained here: `OperationQueue.underlyingQueue` does not retain.
    private let slotQueues: [DispatchQueue]
    /// Each slot's drainer moves the runs of a batch here, to own each run alone while driving it.
    private let batchBuffers: [UnsafeMutablePointer<TransactionRun>]
    /// Told when the lane becomes busy or idle.
    let idleness: Idleness
    /// Where the lane's runs register while they wait for an operation.
    let suspendedRuns: SuspendedRuns
    private let state: LockedBox<State>
    /// The key of the threads' contexts, copied: `ThreadContext.Key.shared` is a lazy global,
    /// checked on every access (S4, S5).
    private let contextKey = ThreadContext.Key.shared

    init(kind: Kind, name: String, idleness: Idleness, suspendedRuns: SuspendedRuns) {
        self.kind = kind
        self.idleness = idleness
        self.suspendedRuns = suspendedRuns
        switch kind {
        case .serial:
            slotQueues = [DispatchQueue(label: name)]
        case .concurrent:
            let count = max(2, ProcessInfo.processInfo.activeProcessorCount)
            slotQueues = (0..<count).map { DispatchQueue(label: "\(name).\($0)") }
        case .main:
            slotQueues = []
        }
        slots = kind == .main ? [OperationQueue.main] : slotQueues.map(Lane.makeSlot)
        batchBuffers = slots.map { _ in .allocate(capacity: Lane.batchLimit) }
        state = LockedBox(State(freeSlots: Array(slots.indices.reversed())))
    }

    /// How many transactions the main lane runs before yielding the main queue.
    static let mainBatchLimit = 64
    /// The most runs a drainer takes at once.
    static let batchLimit = 64
    /// The most completed runs a lane keeps for reuse while it is idle.
    static let idleSpareLimit = 256
    /// The most completed runs a lane other than the main lane keeps for reuse while it is busy
    /// (about 1.4 MB).
    static let busySpareLimit = 4_096

    deinit {
        for buffer in batchBuffers {
            buffer.deallocate()
        }
    }

    private static func makeSlot(_ underlying: DispatchQueue) -> OperationQueue {
        let queue = OperationQueue()
        queue.name = underlying.label
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = underlying
        return queue
    }

    /// Queues a run of `transaction`, run as `configuration` says, reusing a completed run when possible.
    ///
    /// The run handed back is referenced before it is queued, and a drainer reuses a run only when it
    /// finds it uniquely referenced: the transaction that keeps this reference may read the run's
    /// transaction (its route, its action) for as long as it lives, without racing with a reuse.
    ///
    /// - Returns: The queued run, for the transaction handed back to the dispatching code.
    func enqueue(
        _ transaction: consuming Transaction,
        _ route: consuming Route?,
        _ configuration: consuming TransactionRun.Configuration
    ) -> TransactionRun {
        state.lock()
        if let spare = state.valuePointer.pointee.spareRuns.popLast() {
            // Configured in the same critical section: a spare run holds no references that
            // configuring could release, so nothing is called out under the lock.
            spare.configure(
                transaction: consume transaction,
                route: consume route,
                configuration: consume configuration
            )
            // Queued under the same lock: the drainer cannot reuse the run before the caller's
            // transaction refers to it.
            let run = spare
            // Moved into the queue: no retain and release (S4).
            let slot = appendLocked(consume spare, to: &state.valuePointer.pointee)
            state.unlock()
            if let slot { scheduleDrainer(slot) }
            return run
        }
        state.unlock()
        let run = TransactionRun.make(lane: self)
        run.configure(transaction: consume transaction, route: consume route, configuration: consume configuration)
        state.lock()
        state.valuePointer.pointee.createdRuns += 1
        let slot = appendLocked(run, to: &state.valuePointer.pointee)
        state.unlock()
        if let slot { scheduleDrainer(slot) }
        return run
    }

    /// Appends `run` to the queue and counts it.
    ///
    /// - Returns: A free drainer slot to schedule, if the lane may start one.
    private func appendLocked(_ run: consuming TransactionRun, to state: inout State) -> Int? {
        state.queue.append(consume run)
        countStartedLocked(&state)
        return state.blocked ? nil : state.freeSlots.popLast()
    }

    /// Counts a run that the caller drives itself (a `.mainThread` dispatch made on the main queue).
    func adopt() {
        state.withLockedValue { countStartedLocked(&$0) }
    }

    /// Counts one more outstanding run.
    private func countStartedLocked(_ state: inout State) {
        if state.outstanding == 0 {
            state.keepAlive = self
            idleness.laneBecameBusy()
        }
        state.outstanding += 1
    }

    /// Ends a run counted by `adopt()` that completed on its first drive.
    func adoptedRunCompleted() {
        let released = state.withLockedValue { completeLocked(&$0, count: 1) }
        withExtendedLifetime(released) {}
    }

    /// Hands back a suspended run whose operation finished, to be driven again.
    func resume(_ run: TransactionRun) {
        let slot: Int? = state.withLockedValue { state in
            if kind == .serial {
                guard state.blocked else {
                    // The drainer has not let go of the run yet; it will drive it again.
                    state.resumedWhileDriving = true
                    return nil
                }
                state.blocked = false
            }
            state.queue.prepend(run)
            return state.freeSlots.popLast()
        }
        if let slot { scheduleDrainer(slot) }
    }

    /// How many runs completed, and how many of them were cancelled by ``cancelQueuedRuns()``.
    var counts: (completed: Int, cancelled: Int) {
        state.withLockedValue { ($0.completedRuns, $0.cancelledRuns) }
    }

    /// How many completed runs wait for reuse, and how many runs the lane created.
    var runCounts: (spare: Int, created: Int) {
        state.withLockedValue { ($0.spareRuns.count, $0.createdRuns) }
    }

    /// How many runs are queued, running or suspended, counting a completed run once its drainer
    /// has handed it back.
    var outstandingRuns: Int {
        state.withLockedValue { $0.outstanding }
    }

    /// Cancels every run taken from the queue from now on (a shutdown cancelling what is in flight).
    func cancelQueuedRuns() {
        state.withLockedValue { $0.cancelsRuns = true }
    }

    /// Drives the queued runs on the calling thread (the main lane, from the main queue, while
    /// waiting for the engine to become idle).
    func drainOnCurrentThread() {
        var cancelled = 0
        while true {
            let (next, cancelling): (TransactionRun?, Bool) = state.withLockedValue { state in
                state.cancelledRuns += cancelled
                return (state.queue.popFirst(), state.cancelsRuns)
            }
            guard let run = next else { return }
            cancelled = cancelling && run.requestCancel() ? 1 : 0
            if run.drive(suspendedRuns: suspendedRuns) == .completed { adoptedRunCompleted() }
        }
    }

    private func scheduleDrainer(_ slot: Int) {
        slots[slot].addOperation { [self] in drain(slot) }
    }

    /// What a drainer does after each look at the lane, decided under the lane's lock and carried
    /// out outside it, in the manner of swift-async-algorithms' state machines.
    private enum DrainAction {
        /// Drive the `count` runs the batch buffer now holds; cancel each first when `cancelling`.
        case drive(count: Int, cancelling: Bool)
        /// Free these spare runs, then look again: the lane is about to become idle, and waiting for
        /// idleness includes freeing the runs kept for the burst, instead of the next work paying
        /// for it (S6 after S5).
        case freeSpares([TransactionRun])
        /// Give the main queue back (to the user interface, other dispatchers), then go on in a new
        /// drainer.
        case yield
        /// Nothing to drive: the drainer's slot is free again.
        case stop
    }

    /// What a drainer hands back to its lane at each look: the runs it completed since the last one.
    private struct Done {
        var completed = 0
        var cancelled = 0
        /// The completed runs that can be reused.
        var reusable: [TransactionRun] = []
    }

    private func drain(_ slot: Int) {
        let batch = batchBuffers[slot]
        var done = Done()
        var driven = 0
        while true {
            var released: Lane?
            let action = state.withLockedValue { state in
                nextDrainAction(slot: slot, done: done, driven: driven, released: &released, in: &state)
            }
            done.reusable.removeAll(keepingCapacity: true)
            if case .freeSpares = action { continue }
            done.completed = 0
            done.cancelled = 0
            withExtendedLifetime(released) {}
            guard case .drive(let count, let cancelling) = action else {
                if case .yield = action { scheduleDrainer(slot) }
                return
            }
            for position in 0..<count {
                var run = (batch + position).move()
                driven += 1
                if _slowPath(cancelling), run.requestCancel() { done.cancelled += 1 }
                let alone = isKnownUniquelyReferenced(&run)
                let rest = (start: batch + position + 1, count: count - position - 1)
                if drive(run, alone: alone, slot: slot, remaining: rest.start, remainingCount: rest.count) {
                    done.completed += 1
                    if isKnownUniquelyReferenced(&run) && run.clearForReuse() != nil {
                        done.reusable.append(consume run)  // Moved: no retain and release (S4).
                    }
                } else if kind == .serial {
                    // The lane is blocked by the suspended run, so it is not idle: the spares are kept.
                    let released = state.withLockedValue { state in
                        keepSparesLocked(done.reusable, in: &state)
                        state.cancelledRuns += done.cancelled
                        return completeLocked(&state, count: done.completed)
                    }
                    withExtendedLifetime(released) {}
                    return
                }
            }
        }
    }

    /// Takes what the drainer of `slot` hands back and decides what it does next; call with the
    /// lane locked.
    ///
    /// - Parameters:
    ///   - slot: The drainer's slot.
    ///   - done: What the drainer completed since its last look.
    ///   - driven: How many runs the drainer drove so far.
    ///   - released: Set to the lane's reference to itself when it became idle: the drainer drops it
    ///     after unlocking, which may release the lane.
    ///   - state: The lane's state.
    /// - Returns: What the drainer does next.
    private func nextDrainAction(
        slot: Int,
        done: borrowing Done,
        driven: Int,
        released: inout Lane?,
        in state: inout State
    ) -> DrainAction {
        keepSparesLocked(done.reusable, in: &state)
        if done.completed > 0 && done.completed == state.outstanding && state.spareRuns.count > Lane.idleSpareLimit {
            let surplus = Array(state.spareRuns[Lane.idleSpareLimit...])
            state.spareRuns.removeSubrange(Lane.idleSpareLimit...)
            return .freeSpares(surplus)
        }
        released = completeLocked(&state, count: done.completed)
        state.cancelledRuns += done.cancelled
        if kind == .main && driven >= Lane.mainBatchLimit && !state.queue.isEmpty { return .yield }
        // Several runs per lock; concurrent drainers share what is queued.
        let limit =
            kind == .concurrent ? max(1, min(Lane.batchLimit / 2, state.queue.count / slots.count)) : Lane.batchLimit
        let count = state.blocked ? 0 : state.queue.popFirst(upTo: limit, into: batchBuffers[slot])
        if count == 0 {
            state.freeSlots.append(slot)
            return .stop
        }
        return .drive(count: count, cancelling: state.cancelsRuns)
    }

    /// Drives `run` until it completes or suspends; `alone` when the drainer holds the only
    /// reference to it.
    ///
    /// On the serial lane a suspended run blocks the lane, and this drainer stops, unless the run
    /// was resumed before the drainer let go of it; the rest of the drainer's batch goes back to the
    /// front of the queue, in the same critical section, so that FIFO order holds.
    ///
    /// - Returns: Whether the run completed.
    private func drive(
        _ run: TransactionRun,
        alone: Bool,
        slot: Int,
        remaining: UnsafeMutablePointer<TransactionRun>,
        remainingCount: Int
    ) -> Bool {
        let context = ThreadContext.current(key: contextKey)
        // Only the first drive may start alone: a resumed run was reachable from a finish hook.
        var alone = alone
        while true {
            if run.drive(suspendedRuns: suspendedRuns, context: context, alone: alone) == .completed { return true }
            alone = false
            guard kind == .serial else { return false }
            let resumed = state.withLockedValue { state in
                if state.resumedWhileDriving {
                    state.resumedWhileDriving = false
                    return true
                }
                state.queue.prepend(movingFrom: remaining, count: remainingCount)
                state.blocked = true
                state.freeSlots.append(slot)
                return false
            }
            if !resumed { return false }
        }
    }

    /// Keeps as many of the completed `runs` for reuse as the lane's limit allows; the caller frees
    /// the rest outside the lock.
    ///
    /// The main lane keeps no more than an idle lane: its drainer is the main thread, which should
    /// not free a burst's runs all at once when the burst ends (S6).
    private func keepSparesLocked(_ runs: [TransactionRun], in state: inout State) {
        let limit = kind == .main ? Lane.idleSpareLimit : Lane.busySpareLimit
        let room = min(runs.count, max(0, limit - state.spareRuns.count))
        if room > 0 { state.spareRuns.append(contentsOf: runs.prefix(room)) }
    }

    /// Counts `count` runs as done.
    ///
    /// - Returns: The lane's reference to itself when no run is outstanding any more: the caller
    ///   drops it after unlocking, which may release the lane.
    private func completeLocked(_ state: inout State, count: Int) -> Lane? {
        guard count > 0 else { return nil }
        state.outstanding -= count
        state.completedRuns += count
        guard state.outstanding == 0 else { return nil }
        idleness.laneBecameIdle()
        defer { state.keepAlive = nil }
        return state.keepAlive
    }
}
