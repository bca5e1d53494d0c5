/// One field that differs between two values: its path from the root (`items[0].title`), and how
/// each side renders there.
struct Difference: Equatable, Sendable {
    /// The field's path, empty for the root value.
    var path: String
    /// The left-hand value (the expectation, or the state before).
    var lhs: String
    /// The right-hand value (the actual state, or the state after).
    var rhs: String
}
