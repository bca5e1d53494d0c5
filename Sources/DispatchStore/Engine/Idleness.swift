import Foundation

/// Whether an engine's lanes have work, and who waits for them to have none.
///
/// Each lane reports when it becomes busy or idle (under its own lock, so a dispatch that returned is
/// counted). Threads wait on the condition; tasks with continuations, resumed when the last lane idles.
final class Idleness: @unchecked Sendable {
    // @unchecked: `state` is only touched while holding `condition`'s lock.
    private let condition = NSCondition()
    private var state = State()

    private struct State {
        var busyLanes = 0
        var continuations: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    /// A lane got its first outstanding run.
    func laneBecameBusy() {
        condition.lock()
        state.busyLanes += 1
        condition.unlock()
    }

    /// A lane completed its last outstanding run: wakes the waiters if no lane is busy any more.
    func laneBecameIdle() {
        condition.lock()
        state.busyLanes -= 1
        precondition(state.busyLanes >= 0, "DispatchStore: a lane became idle twice")
        var waiters: [CheckedContinuation<Bool, Never>] = []
        if state.busyLanes == 0 {
            condition.broadcast()
            waiters = Array(state.continuations.values)
            state.continuations = [:]
        }
        condition.unlock()
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Blocks until no lane is busy (returns `true`) or until `deadline` (`false`); on the main queue,
    /// `drainMainLane` runs the queued `.mainThread` transactions every 10 ms or so, outside the lock.
    func wait(until deadline: Date?, drainMainLane: (() -> Void)?) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let drainMainLane {
                condition.unlock()
                drainMainLane()
                condition.lock()
            }
            if state.busyLanes == 0 { return true }
            guard drainMainLane != nil || deadline != nil else {
                // No deadline: `wait(until: .distantFuture)` would overflow converting to nanoseconds.
                condition.wait()
                continue
            }
            let wakeUp = drainMainLane != nil ? Date(timeIntervalSinceNow: 0.01) : (deadline ?? .distantFuture)
            let until = deadline.map { min($0, wakeUp) } ?? wakeUp
            if !condition.wait(until: until), let deadline, Date() >= deadline { return state.busyLanes == 0 }
        }
    }

    /// Registers a task waiting until no lane is busy, and returns its number; `nil` (not kept) if none is busy.
    func add(_ continuation: CheckedContinuation<Bool, Never>) -> UInt64? {
        condition.lock()
        defer { condition.unlock() }
        if state.busyLanes == 0 { return nil }
        state.nextWaiter += 1
        state.continuations[state.nextWaiter] = continuation
        return state.nextWaiter
    }

    /// Resumes the waiting task `waiter` with `idle`, unless it was resumed already.
    func resume(_ waiter: UInt64, returning idle: Bool) {
        condition.lock()
        let continuation = state.continuations.removeValue(forKey: waiter)
        condition.unlock()
        continuation?.resume(returning: idle)
    }
}
