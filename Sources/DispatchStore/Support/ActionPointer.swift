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
