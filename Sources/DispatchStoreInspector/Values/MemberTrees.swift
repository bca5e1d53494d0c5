/// Trees of the values met in a store's states, found again by their bytes and confirmed with
/// `==`: an `Equatable` value that is not read member by member (an enum with payloads, a
/// struct) and equal to one encoded before is not encoded again.
///
/// Each entry keeps its value alive, so that the fingerprints in its tree keep naming live
/// storage, and the entries are never dropped: past ``capacity`` entries, new values are not kept,
/// and neither are values whose tree is large (``largestTree``).
/// Used under the inspector's lock only.
final class MemberTrees: @unchecked Sendable {
    /// Whether values of a type are kept: `Equatable`, and small enough for ``ValueBytes``.
    private var kept: [ObjectIdentifier: Bool] = [:]
    private var trees: [ValueBytes: (matches: Any, tree: InspectedValue)] = [:]

    /// The most trees kept.
    static let capacity = 1_024
    /// The size in the page, in bytes, from which a tree is not kept.
    static let largestTree = 1_024

    /// The tree of a value equal to `value` met before.
    func tree<Value>(of value: Value) -> InspectedValue? {
        guard !trees.isEmpty, isKept(Value.self), let key = ValueBytes(value), let entry = trees[key],
            let matches = entry.matches as? (Value) -> Bool, matches(value)
        else { return nil }
        return entry.tree
    }

    /// Keeps `tree`, made of `value`, when it is small (a large member, holding a collection, would
    /// keep every version of it alive).
    func keep<Value>(_ tree: InspectedValue, of value: Value) {
        guard trees.count < Self.capacity, isKept(Value.self),
            StoreTrack.estimatedSize(of: tree, limit: Self.largestTree) < Self.largestTree,
            let key = ValueBytes(value), let equal = Equality.of(Value.self)
        else { return }
        let matches: (Value) -> Bool = { other in equal(value, other) }
        trees[key] = (matches, tree)
    }

    private func isKept<Value>(_ type: Value.Type) -> Bool {
        let identifier = ObjectIdentifier(type)
        if let answer = kept[identifier] { return answer }
        let answer = MemoryLayout<Value>.size <= ValueBytes.capacity && type is any Equatable.Type
        kept[identifier] = answer
        return answer
    }
}
