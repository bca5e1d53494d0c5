import Foundation

/// A queue of transaction runs for one mode, drained in batches by `Operation`s (its drainers).
///
/// A dispatch appends its run and adds a drainer only when a slot is free (an `Operation` per action
/// costs microseconds). A slot is an `OperationQueue` over its own serial queue, which gets a thread
/// even when libdispatch's pool is blocked. The serial lane has one slot and stops while a run is
/// suspended (strict FIFO); the concurrent lane has one per processor; the main lane uses the main
/// queue. A lane keeps itself alive while it has runs in flight, so queued work always ends.
final class Lane: @unchecked Sendable {
    // @unchecked: the mutable state is in `state`, behind its lock; the rest is immutable.
    enum Kind {
        case serial
        case concurrent
        case main
    }

    struct State {
        let queue = FIFO<TransactionRun>()
        var freeSlots: [Int]
        /// Set while a serial run is suspended: nothing else may start.
        var blocked = false
        /// Set when a serial run was resumed before its drainer let go of it.
        var resumedWhileDriving = false
        /// Runs queued, running or suspended.
        var inFlight = 0
        /// Set by a cancelling shutdown: runs taken from the queue from then on are cancelled first.
        var cancelsRuns = false
        var finishedRuns = 0
        var cancelledRuns = 0
        /// Finished runs kept for reuse: bursts reuse the runs of the batches before (S4, S5).
        var spareRuns: [TransactionRun] = []
        var createdRuns = 0
        /// The lane itself while it has runs in flight.
        var keepAlive: Lane?
    }

    /// Keeps the fields below off the object header's cache line (see `Route`).
    private let padding = CacheLinePadding()
    let kind: Kind
    private let slots: [OperationQueue]
    /// The slots' underlying queues, retained here: `OperationQueue.underlyingQueue` does not retain.
    private let slotQueues: [DispatchQueue]
    /// Each drainer moves its batch here, to own each run alone while driving it.
    private let batchBuffers: [UnsafeMutablePointer<TransactionRun>]
    let idleness: Idleness
    let suspendedRuns: SuspendedRuns
    private let state: LockedBox<State>
    /// The threads' context key, copied: `ThreadContext.Key.shared` is a lazy global (S4, S5).
    private let contextKey = ThreadContext.Key.shared

    init(kind: Kind, name: String, idleness: Idleness, suspendedRuns: SuspendedRuns) {
        self.kind = kind
        self.idleness = idleness
        self.suspendedRuns = suspendedRuns
        switch kind {
        case .serial: slotQueues = [DispatchQueue(label: name)]
        case .concurrent:
            let count = max(2, ProcessInfo.processInfo.activeProcessorCount)
            slotQueues = (0..<count).map { DispatchQueue(label: "\(name).\($0)") }
        case .main: slotQueues = []
        }
        slots = kind == .main ? [OperationQueue.main] : slotQueues.map(Lane.makeSlot)
        batchBuffers = slots.map { _ in .allocate(capacity: Lane.batchLimit) }
        state = LockedBox(State(freeSlots: Array(slots.indices.reversed())))
    }

    /// How many transactions the main lane runs before yielding the main queue.
    static let mainBatchLimit = 64
    /// The most runs a drainer takes at once.
    static let batchLimit = 64
    /// The most spare runs a lane keeps while idle, and the main lane at any time.
    static let idleSpareLimit = 256
    /// The most spare runs a busy lane keeps (about 1.4 MB).
    static let busySpareLimit = 4_096

    deinit { for buffer in batchBuffers { buffer.deallocate() } }

    /// A slot: a serial `OperationQueue` over `underlying`.
    private static func makeSlot(_ underlying: DispatchQueue) -> OperationQueue {
        let queue = OperationQueue()
        queue.name = underlying.label
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = underlying
        return queue
    }

    /// Queues a run of `transaction`, reusing a spare run, and returns it: drainers reuse only runs they
    /// find uniquely referenced, so the transaction handed back may read it as long as it lives.
    func enqueue(
        _ transaction: consuming Transaction,
        _ route: consuming Route?,
        _ configuration: consuming TransactionRun.Configuration
    ) -> TransactionRun {
        state.lock()
        if let spare = state.valuePointer.pointee.spareRuns.popLast() {
            // Configured under the lock: a spare run holds nothing that configuring could release.
            spare.configure(
                transaction: consume transaction,
                route: consume route,
                configuration: consume configuration
            )
            // Queued under the lock: no drainer reuses it before the caller refers to it; moved (S4).
            let run = spare
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

    /// Appends `run` to the queue and counts it, and returns a free slot to start a drainer in, if any.
    private func appendLocked(_ run: consuming TransactionRun, to state: inout State) -> Int? {
        state.queue.append(consume run)
        countStartedLocked(&state)
        return state.blocked ? nil : state.freeSlots.popLast()
    }

    /// Counts a run that the caller drives itself (a `.mainThread` dispatch made on the main queue).
    func adopt() { state.withLockedValue { countStartedLocked(&$0) } }

    /// Counts one more run in flight; the first makes the lane busy.
    private func countStartedLocked(_ state: inout State) {
        if state.inFlight == 0 {
            state.keepAlive = self
            idleness.laneBecameBusy()
        }
        state.inFlight += 1
    }

    /// Ends a run counted by `adopt()` that finished at once.
    func adoptedRunFinished() {
        let released = state.withLockedValue { finishLocked(&$0, count: 1) }
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

    /// How many runs finished, and how many of them were cancelled by ``cancelQueuedRuns()``.
    var counts: (finished: Int, cancelled: Int) { state.withLockedValue { ($0.finishedRuns, $0.cancelledRuns) } }
    /// How many spare runs wait for reuse, and how many runs the lane created.
    var runCounts: (spare: Int, created: Int) { state.withLockedValue { ($0.spareRuns.count, $0.createdRuns) } }
    /// How many runs are queued, running or suspended.
    var inFlightRuns: Int { state.withLockedValue { $0.inFlight } }
    /// Cancels every run taken from the queue from now on (a cancelling shutdown).
    func cancelQueuedRuns() { state.withLockedValue { $0.cancelsRuns = true } }

    /// Drives the queued runs on the calling thread (the main lane, while waiting for idleness).
    func drainOnCurrentThread() {
        var cancelled = 0
        while true {
            let (next, cancelling): (TransactionRun?, Bool) = state.withLockedValue { state in
                state.cancelledRuns += cancelled
                return (state.queue.popFirst(), state.cancelsRuns)
            }
            guard let run = next else { return }
            cancelled = cancelling && run.requestCancel() ? 1 : 0
            if run.drive(suspendedRuns: suspendedRuns) == .finished { adoptedRunFinished() }
        }
    }

    private func scheduleDrainer(_ slot: Int) { slots[slot].addOperation { [self] in drain(slot) } }

    /// What a drainer does after each look at the lane: decided under the lock, done outside it.
    private enum DrainAction {
        /// Drive the `count` runs in the batch buffer; cancel each first when `cancelling`.
        case drive(count: Int, cancelling: Bool)
        /// Free these spare runs, then look again: the lane is about to become idle, and freeing the
        /// burst's runs belongs to the wait for idleness, not to the next work (S6 after S5).
        case freeSpares([TransactionRun])
        /// Give the main queue back, then go on in a new drainer.
        case yield
        /// Nothing to drive: the slot is free again.
        case stop
    }

    /// The runs a drainer finished since its last look, handed back to the lane.
    private struct Done {
        var finished = 0
        var cancelled = 0
        var reusable: [TransactionRun] = []
    }

    /// A drainer: drives the queue's runs in batches until there are none, or it yields or blocks.
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
            done.finished = 0
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
                    done.finished += 1
                    if isKnownUniquelyReferenced(&run) && run.clearForReuse() != nil {
                        done.reusable.append(consume run)  // Moved: no retain and release (S4).
                    }
                } else if kind == .serial {
                    // The lane is blocked by the suspended run, so it is not idle: the spares are kept.
                    let released = state.withLockedValue { state in
                        keepSparesLocked(done.reusable, in: &state)
                        state.cancelledRuns += done.cancelled
                        return finishLocked(&state, count: done.finished)
                    }
                    withExtendedLifetime(released) {}
                    return
                }
            }
        }
    }

    /// Takes what the drainer of `slot` finished and decides what it does next (call locked); `released`
    /// gets the lane's reference to itself when it became idle, to drop after unlocking.
    private func nextDrainAction(
        slot: Int,
        done: borrowing Done,
        driven: Int,
        released: inout Lane?,
        in state: inout State
    ) -> DrainAction {
        keepSparesLocked(done.reusable, in: &state)
        if done.finished > 0 && done.finished == state.inFlight && state.spareRuns.count > Lane.idleSpareLimit {
            let surplus = Array(state.spareRuns[Lane.idleSpareLimit...])
            state.spareRuns.removeSubrange(Lane.idleSpareLimit...)
            return .freeSpares(surplus)
        }
        released = finishLocked(&state, count: done.finished)
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

    /// Drives `run` (held alone if `alone`) until it finishes (`true`) or suspends, which on the serial
    /// lane blocks the lane, unless resumed already, and puts the rest of the batch back in front (FIFO).
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
            if run.drive(suspendedRuns: suspendedRuns, context: context, alone: alone) == .finished { return true }
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

    /// Keeps as many finished `runs` as the limit allows (for the main lane, the idle one: the main
    /// thread should not free a burst's runs at once, S6); the caller frees the rest.
    private func keepSparesLocked(_ runs: [TransactionRun], in state: inout State) {
        let limit = kind == .main ? Lane.idleSpareLimit : Lane.busySpareLimit
        let room = min(runs.count, max(0, limit - state.spareRuns.count))
        if room > 0 { state.spareRuns.append(contentsOf: runs.prefix(room)) }
    }

    /// Counts `count` runs as done, and returns the lane's reference to itself once none is in flight,
    /// to drop after unlocking.
    private func finishLocked(_ state: inout State, count: Int) -> Lane? {
        guard count > 0 else { return nil }
        state.inFlight -= count
        state.finishedRuns += count
        guard state.inFlight == 0 else { return nil }
        idleness.laneBecameIdle()
        defer { state.keepAlive = nil }
        return state.keepAlive
    }
}
