/// Calls `body` with a pointer to the value inside `action` (valid during the call).
func withUnsafeActionPointer<Result>(
    to action: any ActionType,
    _ body: (UnsafeRawPointer) throws -> Result
) rethrows -> Result {
    func open<Action: ActionType>(_ action: Action) throws -> Result {
        try withUnsafePointer(to: action) { try body(UnsafeRawPointer($0)) }
    }
    return try open(action)
}

/// Calls `body` with a pointer to the wrapped value, or `nil`.
func withUnsafeOptionalPointer<Value, Result>(
    to value: Value?,
    _ body: (UnsafeRawPointer?) throws -> Result
) rethrows -> Result {
    guard let value else { return try body(nil) }
    return try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
}
