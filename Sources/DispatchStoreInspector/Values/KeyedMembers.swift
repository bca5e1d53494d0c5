/// Builds the next version of a keyed container (a dictionary's or a set's node) member by member,
/// finding each member's earlier version without hashing while the two keep their order.
///
/// A dictionary copied before a change keeps its members in the same places, so the members of the
/// next version mostly come in the order of the previous one, shifted by the ones added or removed
/// before them: each key is first looked for where that shift puts it.
struct KeyedMembers<Value, Source> {
    let previous: InspectedNode?
    private let fingerprinted = Fingerprint.applies(to: Value.self)
    private let equal: ((Value, Value) -> Bool)?
    private let earlier: MemberValues<Value, Source>?
    /// Whether the previous version holds a key, asked of its Swift collection.
    private let wasThere: (Source, String) -> Bool
    private var shift = 0
    private var unchanged = true
    var keys: [String] = []
    var values: [InspectedValue] = []
    var fingerprints: [Fingerprint?] = []
    var origins: [Int32] = []
    var sources: [Value] = []

    /// How far past the expected place a key is looked for before its earlier place is looked up.
    private static var window: Int { 4 }

    init(previous: InspectedNode?, kind: InspectedNode.Kind, count: Int, wasThere: @escaping (Source, String) -> Bool) {
        self.previous = previous?.kind == kind ? previous : nil
        self.wasThere = wasThere
        equal = fingerprinted ? nil : Equality.of(Value.self)
        earlier = self.previous?.sources as? MemberValues<Value, Source>
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        origins.reserveCapacity(count)
        if fingerprinted { fingerprints.reserveCapacity(count) }
        if equal != nil { sources.reserveCapacity(count) }
    }

    /// The position of `key` in the previous version, or -1.
    private mutating func origin(of key: String) -> Int {
        guard let previous else { return -1 }
        let guess = keys.count + shift
        let end = min(previous.keys.count, guess + Self.window)
        if guess >= 0 {
            for candidate in guess..<max(guess, end) where previous.keys[candidate] == key {
                shift = candidate - keys.count
                return candidate
            }
        }
        // A key the previous version did not hold, asked of its Swift collection (a hash lookup);
        // the previous node's index of keys is built only when the order changed (a resize).
        if let earlier, !wasThere(earlier.source, key) {
            // A new member: the members after it are one place further in this version.
            shift -= 1
            return -1
        }
        guard let found = previous.position(of: key) else { return -1 }
        shift = found - keys.count
        return found
    }

    /// Adds a member: its earlier version when the value did not change, else its new tree.
    mutating func add(_ key: String, _ value: Value, encode: (InspectedValue?) throws -> InspectedValue) rethrows {
        let origin = origin(of: key)
        var member: InspectedValue?
        var fingerprint: Fingerprint?
        if fingerprinted { fingerprint = Fingerprint(unchecked: value) }
        if origin >= 0, let previous {
            if let fingerprint, fingerprint == previous.fingerprint(at: origin) {
                member = previous.values[origin]
            } else if let equal, let values = earlier?.values, origin < values.count, equal(values[origin], value) {
                member = previous.values[origin]
            }
        }
        if member == nil || origin != keys.count { unchanged = false }
        keys.append(key)
        values.append(try member ?? encode(origin >= 0 ? previous!.values[origin] : nil))
        origins.append(Int32(origin))
        if fingerprinted { fingerprints.append(fingerprint) }
        if equal != nil { sources.append(value) }
    }

    /// The node made from `source`; the previous one itself when nothing changed.
    func node(kind: InspectedNode.Kind, source: Source) -> InspectedNode {
        if unchanged, let previous, previous.count == keys.count { return previous }
        return InspectedNode(
            kind: kind,
            keys: keys,
            values: values,
            fingerprints: fingerprints,
            origins: origins,
            derivedFrom: previous,
            sources: MemberValues(equal == nil ? nil : sources, source: source)
        )
    }
}
