import Foundation

/// Work a lane drives: a transaction that may suspend while an operation runs elsewhere.
protocol LaneJob: AnyObject, Sendable {
    /// Runs as far as possible on the calling thread.
    func drive() -> DriveResult
}

enum DriveResult {
    /// The job is done.
    case completed
    /// The job waits for an operation; it will be handed back with `Lane.resume(_:)`.
    case suspended
}

/// A queue of transactions drained in batches by a few `Operation`s.
///
/// Queueing one `Operation` per action costs microseconds; a lane instead appends the transaction
/// to its own FIFO and adds a drainer operation only when a drainer slot is free. Each slot is an
/// `OperationQueue` over its own serial dispatch queue: serial queues get a thread even when every
/// worker of libdispatch's CPU-sized pool is blocked (on Linux, a concurrent queue then waits about
/// a second for the pool to grow). The serial lane has one slot and stops while a transaction is
/// suspended, which keeps strict FIFO order even when operations finish later on other threads.
/// A `Dispatcher` has a serial lane, a concurrent lane and a main-queue lane.
final class Lane: @unchecked Sendable {
    // @unchecked: every mutable property is guarded by `lock`.
    enum Kind {
        case serial
        case concurrent
        case main
    }

    let kind: Kind
    private let slots: [OperationQueue]
    /// The slots' underlying queues, retained here: `OperationQueue.underlyingQueue` does not retain.
    private let slotQueues: [DispatchQueue]
    private let idle: IdleMonitor
    private let lock = Lock()
    // Guarded by `lock`.
    private var jobs = FIFO<any LaneJob>()
    private var freeSlots: [Int]
    private var blocked = false
    private var resumedWhileDriving = false
    private var outstanding = 0
    private var idleWaiters = 0

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
        freeSlots = Array(slots.indices.reversed())
    }

    /// How many transactions the main lane runs before yielding the main queue.
    static let mainBatchLimit = 64

    private static func makeSlot(_ underlying: DispatchQueue) -> OperationQueue {
        let queue = OperationQueue()
        queue.name = underlying.label
        queue.maxConcurrentOperationCount = 1
        queue.underlyingQueue = underlying
        return queue
    }

    /// Queues a new job.
    func enqueue(_ job: any LaneJob) {
        lock.lock()
        jobs.append(job)
        outstanding += 1
        let slot = blocked ? nil : freeSlots.popLast()
        lock.unlock()
        if let slot { scheduleDrainer(slot) }
    }

    /// Counts a job that the caller drives itself (a `.mainThread` dispatch made on the main queue).
    func adopt() {
        lock.withLock { outstanding += 1 }
    }

    /// Ends a job counted by `adopt()` that completed on its first drive.
    func adoptedJobCompleted() {
        lock.lock()
        let signal = completeLocked()
        lock.unlock()
        if signal { idle.signal() }
    }

    /// Hands back a suspended job whose operation finished, to be driven again.
    func resume(_ job: any LaneJob) {
        lock.lock()
        if kind == .serial {
            guard blocked else {
                // The drainer has not let go of the job yet; it will drive it again.
                resumedWhileDriving = true
                lock.unlock()
                return
            }
            blocked = false
        }
        jobs.prepend(job)
        let slot = freeSlots.popLast()
        lock.unlock()
        if let slot { scheduleDrainer(slot) }
    }

    /// Whether no job is queued, running or suspended.
    var isIdle: Bool {
        lock.withLock { outstanding == 0 }
    }

    /// Registers (or unregisters) a thread waiting for the lane to become idle.
    func addIdleWaiter(_ delta: Int) {
        lock.withLock { idleWaiters += delta }
    }

    /// Drives the queued jobs on the calling thread (the main lane, from the main queue, while
    /// waiting for the dispatcher to become idle).
    func drainOnCurrentThread() {
        while true {
            lock.lock()
            guard let job = jobs.popFirst() else {
                lock.unlock()
                return
            }
            lock.unlock()
            if job.drive() == .completed { adoptedJobCompleted() }
        }
    }

    private func scheduleDrainer(_ slot: Int) {
        slots[slot].addOperation { [self] in drain(slot) }
    }

    private func drain(_ slot: Int) {
        var completedOne = false
        var driven = 0
        while true {
            lock.lock()
            var signal = false
            if completedOne {
                completedOne = false
                signal = completeLocked()
            }
            if kind == .main && driven == Lane.mainBatchLimit && !jobs.isEmpty {
                // Give the main queue back (to the user interface, other dispatchers), then go on.
                lock.unlock()
                if signal { idle.signal() }
                scheduleDrainer(slot)
                return
            }
            guard !blocked, let job = jobs.popFirst() else {
                freeSlots.append(slot)
                lock.unlock()
                if signal { idle.signal() }
                return
            }
            lock.unlock()
            driven += 1
            if signal { idle.signal() }
            if drive(job, slot: slot) {
                completedOne = true
            } else if kind == .serial {
                return
            }
        }
    }

    /// Drives `job` until it completes or suspends.
    ///
    /// On the serial lane a suspended job blocks the lane (and this drainer stops), unless it was
    /// resumed before the drainer let go of it.
    ///
    /// - Returns: Whether the job completed.
    private func drive(_ job: any LaneJob, slot: Int) -> Bool {
        while true {
            if job.drive() == .completed { return true }
            guard kind == .serial else { return false }
            lock.lock()
            if resumedWhileDriving {
                resumedWhileDriving = false
                lock.unlock()
                continue
            }
            blocked = true
            freeSlots.append(slot)
            lock.unlock()
            return false
        }
    }

    /// Counts one job as done, with `lock` held.
    ///
    /// - Returns: Whether idle waiters should be woken.
    private func completeLocked() -> Bool {
        outstanding -= 1
        return outstanding == 0 && idleWaiters > 0
    }
}

/// Wakes threads waiting for a dispatcher's lanes to become idle.
final class IdleMonitor: @unchecked Sendable {
    // @unchecked: NSCondition is the synchronisation primitive.
    let condition = NSCondition()

    func signal() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
