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

/// A copy of the action at `pointer`, whose type is `type`, boxed: the inverse of
/// ``withUnsafeActionPointer(to:_:)``.
@inline(__always)
func boxedAction(at pointer: UnsafeRawPointer, of type: any ActionType.Type) -> any ActionType {
    func load<Action: ActionType>(_: Action.Type) -> any ActionType {
        pointer.assumingMemoryBound(to: Action.self).pointee
    }
    return load(type)
}
