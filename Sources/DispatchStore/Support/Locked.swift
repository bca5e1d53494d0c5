/// A value that is only ever read or written while holding its own lock.
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched inside `lock.withLock`.
    private let lock = Lock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}
