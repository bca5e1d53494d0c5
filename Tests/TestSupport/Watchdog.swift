import DispatchStore
import Foundation

/// What a call watched by ``runWatched(seconds:_:)`` did: its result and how long it took.
public struct Watched<Result: Sendable>: Sendable {
    /// What the call returned.
    public let result: Result
    /// How long it took.
    public let elapsed: Duration
}

/// Runs `body` on a thread of its own and waits at most `seconds` for it to return.
///
/// A call that hangs fails the test that made it, instead of stalling the whole suite: the thread is
/// left behind, still running. The bound is for failing, not a timing.
///
/// - Returns: What `body` returned and how long it took, or `nil` when it still ran after `seconds`.
public func runWatched<Result: Sendable>(
    seconds: Double,
    _ body: @escaping @Sendable () -> Result
) -> Watched<Result>? {
    let outcome = Shared<Watched<Result>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        let clock = ContinuousClock()
        let start = clock.now
        let result = body()
        outcome.withLock { $0 = Watched(result: result, elapsed: clock.now - start) }
        done.signal()
    }
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return outcome.current
}
