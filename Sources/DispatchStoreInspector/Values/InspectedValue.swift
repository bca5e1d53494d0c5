/// A value as the page shows it: a scalar, a text that reflection gave, or a container of values.
///
/// States and payloads become these trees, through their `Encodable` conformance
/// (``TreeEncoder``) or, for values that are not `Encodable`, through reflection
/// (``Reflection``). Trees are immutable: a state's tree shares every subtree that did not change
/// with the tree of the state before it, so that comparing them (``TreeDiff``) skips what is
/// shared.
enum InspectedValue: Equatable {
    case null
    case bool(Bool)
    case integer(Int64)
    case unsigned(UInt64)
    case double(Double)
    case string(String)
    /// A description made by reflection (`String(reflecting:)`), for a value that has no JSON form.
    case text(String)
    case node(InspectedNode)

    /// Whether two values are the same: scalars by value, containers by identity.
    ///
    /// Used by the comparison, which then looks inside containers that are not identical.
    static func == (lhs: InspectedValue, rhs: InspectedValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let left), .bool(let right)): left == right
        case (.integer(let left), .integer(let right)): left == right
        case (.unsigned(let left), .unsigned(let right)): left == right
        // Bit patterns, so that NaN equals itself and -0 differs from 0, as their texts do.
        case (.double(let left), .double(let right)): left.bitPattern == right.bitPattern
        case (.string(let left), .string(let right)): left == right
        case (.text(let left), .text(let right)): left == right
        case (.node(let left), .node(let right)): left === right
        default: false
        }
    }

    /// The container, if the value is one.
    var node: InspectedNode? {
        if case .node(let node) = self { return node }
        return nil
    }

    /// Whether two trees hold the same values, whatever the order of a dictionary's or a set's
    /// members (which changes from process to process).
    func isEquivalent(to other: InspectedValue) -> Bool {
        guard case .node(let left) = self, case .node(let right) = other else { return self == other }
        if left === right { return true }
        guard left.kind == right.kind, left.count == right.count else { return false }
        switch left.kind {
        case .array:
            return zip(left.values, right.values).allSatisfy { $0.isEquivalent(to: $1) }
        case .object, .dictionary, .set:
            for (index, key) in left.keys.enumerated() {
                guard let other = right.child(named: key), left.values[index].isEquivalent(to: other) else {
                    return false
                }
            }
            return true
        }
    }
}
