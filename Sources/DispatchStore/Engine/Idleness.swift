import Foundation

/// Whether an engine's lanes have work, and who waits for them to have none.
///
/// Each lane reports when it becomes busy or idle (under its own lock, so a dispatch that returned is
/// counted). Threads wait on a semaphore of their own, tasks on a continuation; both are woken when
/// the last busy lane becomes idle.
final class Idleness: Sendable {
    private enum Waiter {
        case thread(DispatchSemaphore)
        case task(CheckedContinuation<Bool, Never>)
    }

    private struct State {
        var busyLanes = 0
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiter: UInt64 = 0

        /// Keeps `waiter` and returns its number; `nil` (not kept) when no lane is busy.
        mutating func add(_ waiter: Waiter) -> UInt64? {
            guard busyLanes > 0 else { return nil }
            nextWaiter += 1
            waiters[nextWaiter] = waiter
            return nextWaiter
        }
    }

    private let state = LockedBox(State())

    /// A lane got its first run in flight.
    func laneBecameBusy() {
        state.withLockedValue { $0.busyLanes += 1 }
    }

    /// A lane finished its last run in flight: wakes the waiters if no lane is busy any more.
    func laneBecameIdle() {
        let waiters = state.withLockedValue { state in
            state.busyLanes -= 1
            precondition(state.busyLanes >= 0, "DispatchStore: a lane became idle twice")
            guard state.busyLanes == 0 else { return [Waiter]() }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters {
            switch waiter {
            case .thread(let semaphore): semaphore.signal()
            case .task(let continuation): continuation.resume(returning: true)
            }
        }
    }

    /// Blocks until no lane is busy (returns `true`) or until `deadline` (`false`); on the main queue,
    /// `drainMainLane` runs the queued `.mainThread` transactions every 10 ms or so.
    func wait(until deadline: DispatchTime?, drainMainLane: (() -> Void)?) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        while true {
            drainMainLane?()
            guard let number = state.withLockedValue({ $0.add(.thread(semaphore)) }) else { return true }
            let wakeUp = drainMainLane == nil ? deadline : min(deadline ?? .distantFuture, .now() + .milliseconds(10))
            if semaphore.wait(timeout: wakeUp ?? .distantFuture) == .success { return true }
            // Timed out; a wake-up that came meanwhile took the waiter away and signalled.
            if state.withLockedValue({ $0.waiters.removeValue(forKey: number) }) == nil { semaphore.wait() }
            if let deadline, DispatchTime.now() >= deadline { return state.withLockedValue { $0.busyLanes == 0 } }
        }
    }

    /// Registers a task waiting until no lane is busy, and returns its number; `nil` (not kept) if none is busy.
    func add(_ continuation: CheckedContinuation<Bool, Never>) -> UInt64? {
        state.withLockedValue { $0.add(.task(continuation)) }
    }

    /// Resumes the waiting task `waiter` with `idle`, unless it was resumed already.
    func resume(_ waiter: UInt64, returning idle: Bool) {
        guard case .task(let continuation) = state.withLockedValue({ $0.waiters.removeValue(forKey: waiter) }) else {
            return
        }
        continuation.resume(returning: idle)
    }
}
