import Dispatch
import DispatchStore
import Foundation

/// Resumes one waiting task exactly once: with the first value handed to ``resume(_:)``, or with a
/// fallback when a time limit passes first.
///
/// The signal (a dispatch's completion, a finished transaction) resumes the task as soon as it
/// comes; the limit is only there to turn a hang into a reported issue.
final class OneShot<Value: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Value, Never>?
        var value: Value?
        var timer: Timer?
    }

    /// The work item that resumes the task at the limit.
    private struct Timer: @unchecked Sendable {
        // @unchecked: a `DispatchWorkItem` may be cancelled from any thread; it is not marked
        // `Sendable` on Linux.
        let item: DispatchWorkItem
    }

    private let state = Locked(State())

    /// Hands over `value`; `false` when the task was resumed already (by an earlier value or by
    /// the limit).
    @discardableResult
    func resume(_ value: Value) -> Bool {
        let taken: (continuation: CheckedContinuation<Value, Never>?, timer: Timer?)? = state.withLock {
            state in
            guard state.value == nil else { return nil }
            state.value = value
            defer {
                state.continuation = nil
                state.timer = nil
            }
            return (state.continuation, state.timer)
        }
        guard let taken else { return false }
        taken.timer?.item.cancel()
        taken.continuation?.resume(returning: value)
        return true
    }

    /// Runs `start`, then suspends until ``resume(_:)`` is called or `limit` passes.
    ///
    /// - Parameters:
    ///   - limit: The longest to wait; then the task resumes with `fallback`.
    ///   - fallback: The value when the limit passes first.
    ///   - isolation: The caller's actor; `start` runs on it, synchronously.
    ///   - start: Starts the work that calls ``resume(_:)``, possibly before `start` returns.
    /// - Returns: The first value handed to ``resume(_:)``, or `fallback`.
    func wait(
        limit: Duration,
        fallback: Value,
        isolation: isolated (any Actor)? = #isolation,
        _ start: () -> Void
    ) async -> Value {
        await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Value, Never>) in
            let timer = DispatchWorkItem { [self] in resume(fallback) }
            let early: Value? = state.withLock { state in
                if let value = state.value { return value }
                state.continuation = continuation
                state.timer = Timer(item: timer)
                return nil
            }
            if let early {
                continuation.resume(returning: early)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit.dispatchInterval, execute: timer)
            start()
        }
    }
}

extension Duration {
    /// The duration for `DispatchTime` arithmetic, clamped to what it can hold.
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        guard seconds >= 0 else { return .nanoseconds(0) }
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow, nanoseconds <= Int64(Int.max) - 1_000_000_000 else { return .never }
        return .nanoseconds(Int(nanoseconds + attoseconds / 1_000_000_000))
    }

    /// The duration for messages, for example `2 seconds` or `0.25 seconds`.
    var readable: String {
        let (seconds, attoseconds) = components
        if attoseconds == 0 { return seconds == 1 ? "1 second" : "\(seconds) seconds" }
        return "\(Double(seconds) + Double(attoseconds) / 1e18) seconds"
    }
}
