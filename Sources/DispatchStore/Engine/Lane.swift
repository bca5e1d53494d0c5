import Foundation

/// A queue of transactions drained in batches by `Operation`s.
///
/// Queueing one `Operation` per action costs microseconds; a lane instead appends the transaction
/// to its own FIFO and adds a drainer operation only when a drainer slot is free. Each slot is an
/// `OperationQueue` over its own serial dispatch queue: serial queues get a thread even when every
/// worker of libdispatch's CPU-sized pool is blocked (on Linux, a concurrent queue then waits about
/// a second for the pool to grow). The serial lane has one slot and stops while a transaction is
/// suspended, which keeps strict FIFO order even when operations finish later on other threads.
/// A `Dispatcher` has a serial lane, a concurrent lane (one drainer per processor) and a main-queue
/// lane.
final class Lane: @unchecked Sendable {
    // @unchecked: every mutable property is guarded by `lock`.
    enum Kind {
        case serial
        case concurrent
        case main
    }

    /// Keeps the fields below off the cache line of the object's header (see `Route`).
    private let padding = CacheLinePadding()
    let kind: Kind
    private let slots: [OperationQueue]
    /// The slots' underlying queues, retained here: `OperationQueue.underlyingQueue` does not retain.
    private let slotQueues: [DispatchQueue]
    /// Each slot's drainer moves the runs of a batch here, to own each run alone while driving it.
    private let batchBuffers: [UnsafeMutablePointer<TransactionRun>]
    private let idle: IdleMonitor
    private let lock = Lock()
    // Guarded by `lock`, which makes the dynamic exclusivity check redundant.
    private let runs = FIFO<TransactionRun>()
    @exclusivity(unchecked) private var freeSlots: [Int]
    @exclusivity(unchecked) private var blocked = false
    @exclusivity(unchecked) private var resumedWhileDriving = false
    @exclusivity(unchecked) private var outstanding = 0
    @exclusivity(unchecked) private var idleWaiters = 0
    /// Set by a cancelling shutdown: every run taken from the queue from then on is cancelled first.
    @exclusivity(unchecked) private var cancelsRuns = false
    /// How many runs completed, and how many of them a shutdown cancelled, since the lane was created.
    @exclusivity(unchecked) private var completedRuns = 0
    @exclusivity(unchecked) private var cancelledRuns = 0
    /// Completed runs kept for reuse, so that a queued dispatch usually allocates nothing.
    @exclusivity(unchecked) private var spareRuns: [TransactionRun] = []
    /// The dispatcher, held strongly only while runs are outstanding: its runs do not count
    /// references to it, and a dispatcher released by its users lives until its work is done.
    @exclusivity(unchecked) private var keepAlive: Dispatcher?
    private unowned(unsafe) var dispatcher: Dispatcher?

    init(kind: Kind, name: String, idle: IdleMonitor) {
        self.kind = kind
        self.idle = idle
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
        freeSlots = Array(slots.indices.reversed())
    }

    /// How many transactions the main lane runs before yielding the main queue.
    static let mainBatchLimit = 64
    /// The most runs a drainer takes at once.
    static let batchLimit = 64
    /// The most completed runs a lane keeps for reuse.
    static let spareLimit = 256

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

    /// Sets the dispatcher the lane belongs to (once, when the dispatcher is created).
    func attach(to dispatcher: Dispatcher) {
        lock.withLock { self.dispatcher = dispatcher }
    }

    /// Queues a run, reusing a completed one when possible.
    ///
    /// The transaction handed back is built before the run is queued: afterwards the caller touches
    /// the run only through reference counts, so a drainer that finds it uniquely referenced may
    /// reuse it without racing with the caller's reads.
    ///
    /// - Parameter configure: Sets up the run: a spare one to reconfigure (called under the lane's
    ///   lock, so it must not call out), or `nil` to create one.
    /// - Returns: The queued run's transaction.
    func enqueueRun(_ configure: (TransactionRun?) -> TransactionRun) -> Transaction {
        lock.lock()
        if let spare = spareRuns.popLast() {
            let run = configure(spare)
            let transaction = run.transaction
            runs.append(run)
            countStartedLocked()
            let slot = blocked ? nil : freeSlots.popLast()
            lock.unlock()
            if let slot { scheduleDrainer(slot) }
            return transaction
        }
        lock.unlock()
        let run = configure(nil)
        let transaction = run.transaction
        enqueue(run)
        return transaction
    }

    /// Queues a new run.
    func enqueue(_ run: TransactionRun) {
        lock.lock()
        runs.append(run)
        countStartedLocked()
        let slot = blocked ? nil : freeSlots.popLast()
        lock.unlock()
        if let slot { scheduleDrainer(slot) }
    }

    /// Counts a run that the caller drives itself (a `.mainThread` dispatch made on the main queue).
    func adopt() {
        lock.withLock { countStartedLocked() }
    }

    /// Counts one more outstanding run, with `lock` held.
    private func countStartedLocked() {
        if outstanding == 0 { keepAlive = dispatcher }
        outstanding += 1
    }

    /// Ends a run counted by `adopt()` that completed on its first drive.
    func adoptedRunCompleted() {
        lock.lock()
        let (signal, released) = completeLocked()
        lock.unlock()
        if signal { idle.signal() }
        released?.laneBecameIdle()
    }

    /// Hands back a suspended run whose operation finished, to be driven again.
    func resume(_ run: TransactionRun) {
        lock.lock()
        if kind == .serial {
            guard blocked else {
                // The drainer has not let go of the run yet; it will drive it again.
                resumedWhileDriving = true
                lock.unlock()
                return
            }
            blocked = false
        }
        runs.prepend(run)
        let slot = freeSlots.popLast()
        lock.unlock()
        if let slot { scheduleDrainer(slot) }
    }

    /// Whether no run is queued, running or suspended.
    var isIdle: Bool {
        lock.withLock { outstanding == 0 }
    }

    /// How many runs completed, and how many of them were cancelled by ``cancelQueuedRuns()``.
    var counts: (completed: Int, cancelled: Int) {
        lock.withLock { (completedRuns, cancelledRuns) }
    }

    /// Cancels every run taken from the queue from now on (a shutdown cancelling what is in flight).
    func cancelQueuedRuns() {
        lock.withLock { cancelsRuns = true }
    }

    /// Registers (or unregisters) a thread waiting for the lane to become idle.
    func addIdleWaiter(_ delta: Int) {
        lock.withLock { idleWaiters += delta }
    }

    /// Drives the queued runs on the calling thread (the main lane, from the main queue, while
    /// waiting for the dispatcher to become idle).
    func drainOnCurrentThread() {
        var cancelled = 0
        while true {
            lock.lock()
            cancelledRuns += cancelled
            guard let run = runs.popFirst() else {
                lock.unlock()
                return
            }
            let cancelling = cancelsRuns
            lock.unlock()
            cancelled = cancelling && run.requestCancel() ? 1 : 0
            if run.drive() == .completed { adoptedRunCompleted() }
        }
    }

    private func scheduleDrainer(_ slot: Int) {
        slots[slot].addOperation { [self] in drain(slot) }
    }

    private func drain(_ slot: Int) {
        let batch = batchBuffers[slot]
        var completed = 0
        var cancelled = 0
        var driven = 0
        var reusable: [TransactionRun] = []
        while true {
            lock.lock()
            let (signal, released) = completeLocked(completed)
            completed = 0
            cancelledRuns += cancelled
            cancelled = 0
            let cancelling = cancelsRuns
            let kept = min(reusable.count, Lane.spareLimit - spareRuns.count)
            if kept > 0 { spareRuns.append(contentsOf: reusable[..<kept]) }
            if kind == .main && driven >= Lane.mainBatchLimit && !runs.isEmpty {
                // Give the main queue back (to the user interface, other dispatchers), then go on.
                lock.unlock()
                reusable.removeAll()
                if signal { idle.signal() }
                scheduleDrainer(slot)
                return
            }
            // Several runs per lock; concurrent drainers share what is queued.
            let limit =
                kind == .concurrent ? max(1, min(Lane.batchLimit / 2, runs.count / slots.count)) : Lane.batchLimit
            let count = blocked ? 0 : runs.popFirst(upTo: limit, into: batch)
            if count == 0 {
                freeSlots.append(slot)
                lock.unlock()
                reusable.removeAll()
                if signal { idle.signal() }
                released?.laneBecameIdle()
                return
            }
            lock.unlock()
            reusable.removeAll(keepingCapacity: true)
            if signal { idle.signal() }
            released?.laneBecameIdle()
            for position in 0..<count {
                var run = (batch + position).move()
                driven += 1
                if _slowPath(cancelling), run.requestCancel() { cancelled += 1 }
                if drive(run, slot: slot, remaining: batch + position + 1, remainingCount: count - position - 1) {
                    completed += 1
                    if run.isReusable && isKnownUniquelyReferenced(&run) {
                        run.clearForReuse()
                        reusable.append(run)
                    }
                } else if kind == .serial {
                    lock.lock()
                    let (_, released) = completeLocked(completed)
                    cancelledRuns += cancelled
                    lock.unlock()
                    released?.laneBecameIdle()
                    return
                }
            }
        }
    }

    /// Drives `run` until it completes or suspends.
    ///
    /// On the serial lane a suspended run blocks the lane, and this drainer stops, unless the run
    /// was resumed before the drainer let go of it; the rest of the drainer's batch goes back to the
    /// front of the queue, in the same critical section, so that FIFO order holds.
    ///
    /// - Returns: Whether the run completed.
    private func drive(
        _ run: TransactionRun,
        slot: Int,
        remaining: UnsafeMutablePointer<TransactionRun>,
        remainingCount: Int
    ) -> Bool {
        while true {
            if run.drive() == .completed { return true }
            guard kind == .serial else { return false }
            lock.lock()
            if resumedWhileDriving {
                resumedWhileDriving = false
                lock.unlock()
                continue
            }
            runs.prepend(movingFrom: remaining, count: remainingCount)
            blocked = true
            freeSlots.append(slot)
            lock.unlock()
            return false
        }
    }

    /// Counts `count` runs as done, with `lock` held.
    ///
    /// - Returns: Whether idle waiters should be woken, and, when no run is outstanding any more, the
    ///   dispatcher to tell (after unlocking) with `laneBecameIdle()`; dropping that reference may
    ///   release the dispatcher.
    private func completeLocked(_ count: Int = 1) -> (Bool, Dispatcher?) {
        guard count > 0 else { return (false, nil) }
        outstanding -= count
        completedRuns += count
        guard outstanding == 0 else { return (false, nil) }
        let released = keepAlive
        keepAlive = nil
        return (idleWaiters > 0, released)
    }
}
