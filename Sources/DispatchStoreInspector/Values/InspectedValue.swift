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

/// A container of a tree: the fields of a struct, a dictionary's entries, an array's elements or a
/// set's members.
///
/// Members of objects, dictionaries and sets have keys: a field's name, a dictionary key as text, a
/// set member's text (its own text for a string, its JSON otherwise). Each member remembers the
/// bytes of the Swift value it was made from, when they identify it (``Fingerprint``): encoding the
/// next state reuses a member whose value has the same bytes, without encoding it again.
final class InspectedNode {
    /// What the container is.
    enum Kind: UInt8 {
        /// A struct's or a class's fields, or an enum case: keys in declaration order.
        case object
        /// A dictionary's entries: shown sorted by key.
        case dictionary
        /// An array's elements, in order.
        case array
        /// A set's members: shown sorted.
        case set
    }

    let kind: Kind
    /// The members' keys; empty for an array.
    let keys: [String]
    let values: [InspectedValue]
    /// The bytes of the Swift value each member was made from, when they identify it; empty when
    /// no member has any.
    let fingerprints: [Fingerprint?]
    /// Where each member was in the node this one is the next version of (``derivedFrom``).
    ///
    /// -1 for a new member. The comparison of the two then looks up nothing.
    let origins: [Int32]?
    /// The node this one is the next version of, by identity (never dereferenced).
    let derivedFrom: ObjectIdentifier?
    /// The members' Swift values (a ``MemberValues``), kept when they are `Equatable` and have no
    /// fingerprint, so that the next version can compare them.
    let sources: AnyObject?
    /// Where each key is, built when first needed (only containers compared with a later version
    /// need it).
    private var positions: [String: Int]?

    init(
        kind: Kind,
        keys: [String],
        values: [InspectedValue],
        fingerprints: [Fingerprint?] = [],
        origins: [Int32]? = nil,
        derivedFrom: InspectedNode? = nil,
        sources: AnyObject? = nil
    ) {
        self.kind = kind
        self.keys = keys
        self.values = values
        self.fingerprints = fingerprints.contains { $0 != nil } ? fingerprints : []
        self.origins = derivedFrom == nil ? nil : origins
        self.derivedFrom = derivedFrom.map(ObjectIdentifier.init)
        self.sources = sources
    }

    var count: Int {
        values.count
    }

    /// The fingerprint of member `index`, if it has one.
    func fingerprint(at index: Int) -> Fingerprint? {
        index < fingerprints.count ? fingerprints[index] : nil
    }

    /// The position of the member with `key`; `hint` is where it probably is (a struct's fields
    /// come in the same order each time).
    func position(of key: String, hint: Int? = nil) -> Int? {
        if let hint, hint < keys.count, keys[hint] == key { return hint }
        if keys.count <= 8 { return keys.firstIndex(of: key) }
        if positions == nil {
            var map: [String: Int] = [:]
            map.reserveCapacity(keys.count)
            for (index, name) in keys.enumerated() {
                map[name] = index
            }
            positions = map
        }
        return positions![key]
    }

    /// The member with `key`.
    func child(named key: String) -> InspectedValue? {
        position(of: key).map { values[$0] }
    }
}

/// The bytes of a Swift value that identify it while an earlier value holding the same bytes is
/// alive: equal bytes mean the same scalars and the same copy-on-write buffers, which nobody can
/// change while both values share them.
///
/// Only values whose type is plain data, a `String`, or a standard collection or optional of such
/// types get one: a class instance can change behind an unchanged reference.
struct Fingerprint: Equatable {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var size: UInt8

    /// The most bytes a fingerprint holds.
    static let capacity = 32

    /// Whether values of `Value` get fingerprints.
    static func applies<Value>(to type: Value.Type) -> Bool {
        MemoryLayout<Value>.size <= capacity && ValueSemantics.isValue(type)
    }

    /// The fingerprint of `value`, or `nil` when its type gets none.
    init?<Value>(of value: Value) {
        guard Self.applies(to: Value.self) else { return nil }
        self.init(unchecked: value)
    }

    /// The fingerprint of `value`, whose type ``applies(to:)``.
    init<Value>(unchecked value: Value) {
        size = UInt8(MemoryLayout<Value>.size)
        withUnsafeMutableBytes(of: &words) { target in
            withUnsafeBytes(of: value) { source in
                target.copyMemory(from: source)
            }
        }
    }

    static func == (lhs: Fingerprint, rhs: Fingerprint) -> Bool {
        lhs.size == rhs.size && lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1
            && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }
}

/// The Swift collection a node was made from, and its members' values in the node's order when
/// they can be compared with `==`: what the next version's members are compared with.
final class MemberValues<Value, Source> {
    let values: [Value]?
    let source: Source

    init(_ values: [Value]?, source: Source) {
        self.values = values
        self.source = source
    }
}

/// `==` for a type that is `Equatable`, found once per type at run time.
enum Equality {
    /// How to compare two values of `type`, or `nil` when it is not `Equatable`.
    static func of<Value>(_ type: Value.Type) -> ((Value, Value) -> Bool)? {
        guard let equatable = type as? any Equatable.Type else { return nil }
        func make<Compared: Equatable>(_ compared: Compared.Type) -> Any {
            { (left: Compared, right: Compared) in left == right } as (Compared, Compared) -> Bool
        }
        return make(equatable) as? (Value, Value) -> Bool
    }
}
