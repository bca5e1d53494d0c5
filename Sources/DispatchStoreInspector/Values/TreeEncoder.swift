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
    /// The tree of `value`, sharing what it can with `previous` and with the trees of equal members
    /// met before (`trees`, a store's).
    ///
    /// - Throws: What `value`'s `encode(to:)` throws.
    static func tree<Value: Encodable>(
        of value: Value,
        previous: InspectedValue? = nil,
        trees: MemberTrees? = nil
    ) throws -> InspectedValue {
        try fresh(value, previous: previous, trees: trees)
    }

    /// A member: `previous` itself when `value` has its fingerprint, a new tree otherwise.
    static func member<Value: Encodable>(
        _ value: Value,
        previous: InspectedValue?,
        previousFingerprint: Fingerprint?,
        trees: MemberTrees?
    ) throws -> (value: InspectedValue, fingerprint: Fingerprint?) {
        let fingerprint = Fingerprint(of: value)
        if let fingerprint, let previous, fingerprint == previousFingerprint {
            return (previous, fingerprint)
        }
        return (try fresh(value, previous: previous, trees: trees), fingerprint)
    }

    /// The tree of `value`, encoded again (its members may still be reused).
    static func fresh<Value: Encodable>(
        _ value: Value,
        previous: InspectedValue?,
        trees: MemberTrees? = nil
    ) throws -> InspectedValue {
        if let scalar = scalar(value) { return scalar }
        if let dictionary = value as? any InspectableCollection {
            return .node(try dictionary.inspectedNode(previous: previous?.node))
        }
        if let known = trees?.tree(of: value) { return known }
        let encoder = TreeEncoder(previous: previous, trees: trees)
        try value.encode(to: encoder)
        let tree = encoder.result()
        trees?.keep(tree, of: value)
        return tree
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

extension Dictionary: InspectableCollection where Key: Encodable, Value: Encodable {
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode {
        // Only a string or integer key can be asked of the previous dictionary by its text.
        var members = KeyedMembers<Value, Self>(previous: previous, kind: .dictionary, count: count) { earlier, text in
            if Key.self == String.self { return earlier[unsafeBitCast(text, to: Key.self)] != nil }
            if Key.self == Int.self, let number = Int(text) {
                return earlier[unsafeBitCast(number, to: Key.self)] != nil
            }
            return true
        }
        for (key, value) in self {
            try members.add(TreeEncoding.keyText(key), value) { earlier in
                try TreeEncoding.fresh(value, previous: earlier)
            }
        }
        return members.node(kind: .dictionary, source: self)
    }
}

extension Set: InspectableCollection where Element: Encodable {
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode {
        var members = KeyedMembers<Element, Self>(previous: previous, kind: .set, count: count) { earlier, text in
            if Element.self == String.self { return earlier.contains(unsafeBitCast(text, to: Element.self)) }
            return true
        }
        for element in self {
            let name = try TreeEncoding.keyText(element)
            // Equal members have equal texts: a member found in the previous version stands as it is.
            try members.add(name, element) { earlier in
                if Element.self == String.self { return .string(name) }
                return try earlier ?? TreeEncoding.fresh(element, previous: nil)
            }
        }
        return members.node(kind: .set, source: self)
    }
}

extension Array: InspectableCollection where Element: Encodable {
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode {
        let previous = previous?.kind == .array ? previous : nil
        let fingerprinted = Fingerprint.applies(to: Element.self)
        var values: [InspectedValue] = []
        var fingerprints: [Fingerprint?] = []
        values.reserveCapacity(count)
        if fingerprinted { fingerprints.reserveCapacity(count) }
        var unchanged = previous?.count == count
        for (index, element) in enumerated() {
            let known = previous.map { index < $0.count } ?? false
            var member: InspectedValue?
            if fingerprinted {
                let fingerprint = Fingerprint(unchecked: element)
                fingerprints.append(fingerprint)
                if known, fingerprint == previous!.fingerprint(at: index) { member = previous!.values[index] }
            }
            if member == nil {
                unchanged = false
                member = try TreeEncoding.fresh(element, previous: known ? previous!.values[index] : nil)
            }
            values.append(member!)
        }
        if unchanged, let previous { return previous }
        return InspectedNode(kind: .array, keys: [], values: values, fingerprints: fingerprints)
    }
}
