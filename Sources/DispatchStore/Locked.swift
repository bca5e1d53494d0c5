/// A value behind a lock: the way to give a middleware (or any `Sendable` class) mutable state.
///
/// ``Middleware`` must be `Sendable`, because the dispatcher calls its hooks on many threads at
/// once. A middleware class with a plain `var` does not compile; keep the state in a `Locked`
/// instead, and the class stays checked by the compiler, with no `@unchecked`:
///
/// ```swift
/// final class Metrics: Middleware {
///     private let counts = Locked([String: Int]())
///
///     func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
///         counts.withLock { $0[result.succeeded ? "succeeded" : "other", default: 0] += 1 }
///     }
///     // ...
/// }
/// ```
///
/// - Note: Thread-safe. `Locked` is `Sendable` when its value is. Keep the closures short, and do
///   not dispatch `.sync` or call another `Locked` from inside them.
public final class Locked<Value>: Sendable where Value: Sendable {
    private let box: LockedBox<Value>

    /// Creates a lock guarding `value`.
    ///
    /// - Parameter value: The initial value.
    public init(_ value: Value) {
        box = LockedBox(value)
    }

    /// Runs `body` with exclusive access to the value.
    ///
    /// - Parameter body: Reads or changes the value.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try box.withLockedValue(body)
    }

    /// A copy of the value, read under the lock.
    public var value: Value {
        box.withLockedValue { $0 }
    }
}
