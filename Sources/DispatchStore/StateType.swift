/// A store's state: a value that can be created empty and shared across threads.
///
/// Prefer a `struct` of value types: the dispatcher copies the state to hand snapshots to observers,
/// and the recorder keeps one copy per history entry, which copy-on-write makes cheap.
///
/// ```swift
/// struct Counter: StateType {
///     var count = 0
/// }
/// ```
public protocol StateType: Sendable {
    /// Creates the initial, empty state.
    init()
}
