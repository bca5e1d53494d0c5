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
