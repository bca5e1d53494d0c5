/// An immutable snapshot of a store's subscriptions, replaced whenever one is added or removed.
///
/// The whole-state observers come first, in the order they were made; then the members of each
/// key-path group, together. A change then visits only the groups whose value changed.
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

    init(entries: [ObserverEntry] = []) {
        var ordered = entries.filter { $0.group == nil }
        stateObserverCount = ordered.count
        var groups: [KeyPathGroup] = []
        for entry in entries {
            if let group = entry.group, !groups.contains(where: { $0 === group }) { groups.append(group) }
        }
        var ranges: [Range<Int>] = []
        for group in groups {
            let start = ordered.count
            ordered += entries.filter { $0.group === group }
            ranges.append(start..<ordered.count)
        }
        self.entries = ordered
        self.unretainedEntries = ordered.map { Unmanaged.passUnretained($0) }
        self.groups = groups
        self.groupRanges = ranges
    }

    /// The set without subscriptions.
    static let empty = ObserverSet()

    var isEmpty: Bool {
        entries.isEmpty
    }

    func adding(_ entry: ObserverEntry) -> ObserverSet {
        ObserverSet(entries: entries + [entry])
    }

    /// The set without the entries matching `shouldRemove`, or `nil` when none matched.
    func removing(where shouldRemove: (ObserverEntry) -> Bool) -> ObserverSet? {
        let remaining = entries.filter { !shouldRemove($0) }
        return remaining.count == entries.count ? nil : ObserverSet(entries: remaining)
    }

    /// The existing group for `keyPath`, if some subscription watches it.
    func group(for keyPath: AnyKeyPath) -> KeyPathGroup? {
        groups.first { $0.keyPath == keyPath }
    }
}
