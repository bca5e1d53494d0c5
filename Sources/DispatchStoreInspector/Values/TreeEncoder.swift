/// Turns `Encodable` values into trees (``InspectedValue``), reusing every member of the previous
/// tree whose Swift value has not changed.
///
/// The previous tree is the tree of an earlier value of the same type that is still alive: a member
/// whose value has the same bytes as the one it was made from (``Fingerprint``) is taken as it is,
/// so encoding a state after an action costs what the action changed, plus the members of each
/// container it changed. Dictionaries, sets and arrays are read directly, not through their
/// `Encodable` conformance, so that their members can be matched one by one: a dictionary by key,
/// a set by member, an array by position. Everything else goes through `encode(to:)` with this
/// module's `Encoder`.
enum TreeEncoding {
    /// The tree of `value`, sharing what it can with `previous`.
    ///
    /// - Throws: What `value`'s `encode(to:)` throws.
    static func tree<Value: Encodable>(of value: Value, previous: InspectedValue? = nil) throws -> InspectedValue {
        try fresh(value, previous: previous)
    }

    /// A member: `previous` itself when `value` has its fingerprint, a new tree otherwise.
    static func member<Value: Encodable>(
        _ value: Value,
        previous: InspectedValue?,
        previousFingerprint: Fingerprint?
    ) throws -> (value: InspectedValue, fingerprint: Fingerprint?) {
        let fingerprint = Fingerprint(of: value)
        if let fingerprint, let previous, fingerprint == previousFingerprint {
            return (previous, fingerprint)
        }
        return (try fresh(value, previous: previous), fingerprint)
    }

    /// The tree of `value`, encoded again (its members may still be reused).
    static func fresh<Value: Encodable>(_ value: Value, previous: InspectedValue?) throws -> InspectedValue {
        if let scalar = scalar(value) { return scalar }
        if let dictionary = value as? any InspectableCollection {
            return .node(try dictionary.inspectedNode(previous: previous?.node))
        }
        let encoder = TreeEncoder(previous: previous)
        try value.encode(to: encoder)
        return encoder.result()
    }

    /// The common scalars, without an encoder or a dynamic cast.
    private static func scalar<Value>(_ value: Value) -> InspectedValue? {
        if Value.self == Int.self { return .integer(Int64(unsafeBitCast(value, to: Int.self))) }
        if Value.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if Value.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if Value.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
        if Value.self == Int64.self { return .integer(unsafeBitCast(value, to: Int64.self)) }
        if Value.self == UInt64.self { return .unsigned(unsafeBitCast(value, to: UInt64.self)) }
        return nil
    }

    /// How a dictionary key or a set member is named: a string as itself, an integer in decimal
    /// (as `JSONEncoder` writes dictionary keys), anything else as its JSON.
    static func keyText<Key: Encodable>(_ key: Key) throws -> String {
        if Key.self == String.self { return unsafeBitCast(key, to: String.self) }
        if Key.self == Int.self { return String(unsafeBitCast(key, to: Int.self)) }
        let tree = try fresh(key, previous: nil)
        switch tree {
        case .string(let text), .text(let text): return text
        default: return PageJSON.text(of: tree)
        }
    }
}

/// A dictionary, a set or an array: read member by member.
protocol InspectableCollection {
    /// The collection's node, reusing the members of `previous` that have not changed.
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode
}

extension Dictionary: InspectableCollection where Key: Encodable, Value: Encodable {
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode {
        let previous = previous?.kind == .dictionary ? previous : nil
        var keys: [String] = []
        var values: [InspectedValue] = []
        var fingerprints: [Fingerprint?] = []
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        fingerprints.reserveCapacity(count)
        for (key, value) in self {
            let name = try TreeEncoding.keyText(key)
            let index = previous?.position(of: name)
            let member = try TreeEncoding.member(
                value,
                previous: index.map { previous!.values[$0] },
                previousFingerprint: index.flatMap { previous!.fingerprint(at: $0) }
            )
            keys.append(name)
            values.append(member.value)
            fingerprints.append(member.fingerprint)
        }
        return InspectedNode(kind: .dictionary, keys: keys, values: values, fingerprints: fingerprints)
    }
}

extension Set: InspectableCollection where Element: Encodable {
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode {
        let previous = previous?.kind == .set ? previous : nil
        var keys: [String] = []
        var values: [InspectedValue] = []
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        for element in self {
            let name = try TreeEncoding.keyText(element)
            keys.append(name)
            if Element.self == String.self {
                values.append(.string(name))
            } else if let index = previous?.position(of: name) {
                // Equal members have equal texts: the earlier tree stands.
                values.append(previous!.values[index])
            } else {
                values.append(try TreeEncoding.fresh(element, previous: nil))
            }
        }
        return InspectedNode(kind: .set, keys: keys, values: values)
    }
}

extension Array: InspectableCollection where Element: Encodable {
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode {
        let previous = previous?.kind == .array ? previous : nil
        var values: [InspectedValue] = []
        var fingerprints: [Fingerprint?] = []
        values.reserveCapacity(count)
        fingerprints.reserveCapacity(count)
        for (index, element) in enumerated() {
            let known = previous.map { index < $0.count } ?? false
            let member = try TreeEncoding.member(
                element,
                previous: known ? previous!.values[index] : nil,
                previousFingerprint: known ? previous!.fingerprint(at: index) : nil
            )
            values.append(member.value)
            fingerprints.append(member.fingerprint)
        }
        return InspectedNode(kind: .array, keys: [], values: values, fingerprints: fingerprints)
    }
}
