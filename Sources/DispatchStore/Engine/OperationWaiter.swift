import Dispatch

/// Waits for one operation that did not finish inline (the single-store `.sync` path).
final class OperationWaiter: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let state = LockedBox<(status: StoreOutcome.Status?, abandoned: Bool)>((nil, false))

    /// Hands over the status; `false` when the waiter gave up (timed out) first.
    func deliver(_ status: StoreOutcome.Status) -> Bool {
        let accepted = state.withLockedValue { state in
            guard !state.abandoned else { return false }
            state.status = status
            return true
        }
        if accepted { semaphore.signal() }
        return accepted
    }

    /// The status, or `nil` when `timeout` passed first.
    func wait(timeout: Duration?) -> StoreOutcome.Status? {
        if let timeout {
            if semaphore.wait(timeout: .now() + timeout.dispatchInterval) == .timedOut {
                return state.withLockedValue { state in
                    if state.status == nil { state.abandoned = true }
                    return state.status
                }
            }
        } else {
            semaphore.wait()
        }
        return state.withLockedValue { $0.status }
    }
}
