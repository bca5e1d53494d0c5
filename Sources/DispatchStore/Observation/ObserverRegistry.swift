/// A store's subscriptions as registered, behind the store's lock: adding or ending one costs
/// amortized O(1), whatever their number.
///
/// Deliveries walk an immutable ``ObserverSet``, built from the registry on the first delivery
/// after a change of the subscriptions and then shared by every delivery until the next change.
/// Building it costs one pass over the subscriptions, no more than a delivery that calls them all.
struct ObserverRegistry {
    /// The subscriptions in the order they were made; `nil` where one ended.
    private var entries: [ObserverEntry?] = []
    private var slotByID: [UInt64: Int] = [:]
    private var holes = 0
    /// The key-path groups with at least one member, by key path, with their member counts.
    private var groups: [AnyKeyPath: (group: KeyPathGroup, members: Int)] = [:]
    /// The snapshot for deliveries; `nil` after a change.
    private var snapshot: ObserverSet? = ObserverSet.empty

    /// Whether the store has no subscription.
    var isEmpty: Bool {
        entries.count == holes
    }

    /// How many subscriptions the store has.
    var count: Int {
        entries.count - holes
    }

    /// The group of the subscriptions to `keyPath`, if there is one.
    func group(for keyPath: AnyKeyPath) -> KeyPathGroup? {
        groups[keyPath]?.group
    }

    /// Adds a subscription (joining its group, if it has one).
    mutating func add(_ entry: ObserverEntry) {
        slotByID[entry.id] = entries.count
        entries.append(entry)
        if let group = entry.group {
            groups[group.keyPath, default: (group, 0)].members += 1
        }
        snapshot = nil
    }

    /// Ends the subscription `id`.
    ///
    /// - Returns: Whether it existed.
    @discardableResult
    mutating func remove(id: UInt64) -> Bool {
        guard let slot = slotByID.removeValue(forKey: id), let entry = entries[slot] else { return false }
        entries[slot] = nil
        holes += 1
        leave(entry)
        snapshot = nil
        if holes > 32 && holes * 2 > entries.count { compact() }
        return true
    }

    /// Ends every subscription matching `shouldRemove`; one pass over all of them.
    mutating func removeAll(where shouldRemove: (ObserverEntry) -> Bool) {
        var removed = false
        for slot in entries.indices {
            guard let entry = entries[slot], shouldRemove(entry) else { continue }
            entries[slot] = nil
            slotByID[entry.id] = nil
            holes += 1
            leave(entry)
            removed = true
        }
        guard removed else { return }
        snapshot = nil
        if holes * 2 > entries.count { compact() }
    }

    /// The subscriptions as deliveries walk them; rebuilt only after a change.
    mutating func currentSet() -> ObserverSet {
        if let snapshot { return snapshot }
        let built = ObserverSet(entries: entries.compactMap { $0 })
        snapshot = built
        return built
    }

    /// Drops a group left without members: a later subscription to its key path starts a new one,
    /// from the value at that moment (this one stopped following the changes).
    private mutating func leave(_ entry: ObserverEntry) {
        guard let group = entry.group, let membership = groups[group.keyPath] else { return }
        groups[group.keyPath] = membership.members == 1 ? nil : (membership.group, membership.members - 1)
    }

    /// Closes the holes, keeping the order.
    private mutating func compact() {
        entries = entries.filter { $0 != nil }
        holes = 0
        slotByID.removeAll(keepingCapacity: true)
        for (slot, entry) in entries.enumerated() {
            if let entry { slotByID[entry.id] = slot }
        }
    }
}
