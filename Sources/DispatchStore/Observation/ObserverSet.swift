/// An immutable snapshot of a store's subscriptions, in the order deliveries call them.
///
/// The whole-state observers come first, in the order they were made; then the members of each
/// key-path group, together. A change then visits only the groups whose value changed, and in
/// each list only the subscriptions made before the change was committed (see
/// ``ObserverEntry/since``): they come first, since subscriptions only ever join at the end.
final class ObserverSet: @unchecked Sendable {
    // @unchecked: immutable after init; the entries and groups it refers to are only used under
    // their store's locks.

    /// The subscriptions, in delivery order.
    let entries: [ObserverEntry]
    /// The same entries without reference counting, for the delivery loop (`entries` keeps them alive).
    let unretainedEntries: [Unmanaged<ObserverEntry>]
    /// How many whole-state observers lead `entries`.
    let stateObserverCount: Int
    /// The key-path groups, and the range of `entries` holding each one's members.
    let groups: [KeyPathGroup]
    let groupRanges: [Range<Int>]
    /// The same groups without reference counting, for the delivery (`groups` keeps them alive).
    let unretainedGroups: [Unmanaged<KeyPathGroup>]

    /// Orders `entries` for delivery; one pass, plus one per group.
    init(entries: [ObserverEntry] = []) {
        var ordered = entries.filter { $0.group == nil }
        stateObserverCount = ordered.count
        var groups: [KeyPathGroup] = []
        var members: [ObjectIdentifier: [ObserverEntry]] = [:]
        for entry in entries {
            guard let group = entry.group else { continue }
            let key = ObjectIdentifier(group)
            if members[key] == nil { groups.append(group) }
            members[key, default: []].append(entry)
        }
        var ranges: [Range<Int>] = []
        for group in groups {
            let start = ordered.count
            ordered += members[ObjectIdentifier(group)] ?? []
            ranges.append(start..<ordered.count)
        }
        self.entries = ordered
        self.unretainedEntries = ordered.map { Unmanaged.passUnretained($0) }
        self.groups = groups
        self.groupRanges = ranges
        self.unretainedGroups = groups.map { Unmanaged.passUnretained($0) }
    }

    /// The set without subscriptions.
    static let empty = ObserverSet()

    var isEmpty: Bool {
        entries.isEmpty
    }

    /// The part of `range` made of subscriptions that receive change number `change`: those made
    /// before it was committed.
    func admitted(_ range: Range<Int>, change: UInt64) -> Range<Int> {
        guard let last = range.last, entries[last].since > change else { return range }
        // Subscriptions join at the end: the ones too late for the change form a suffix.
        var low = range.lowerBound
        var high = last
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].since > change { high = middle } else { low = middle + 1 }
        }
        return range.lowerBound..<low
    }
}
