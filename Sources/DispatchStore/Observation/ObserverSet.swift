/// One subscription to a store's changes.
///
/// Not generic: the delivery loop walks an array of these, and generic code that is not
/// specialised for the caller's types would look up runtime metadata on every element. The
/// typed work sits in `call`, a closure built by the `@inlinable` subscribe methods, so the
/// caller's module compiles it for its concrete state and action types.
@usableFromInline
final class ObserverEntry {
    /// Calls the subscriber with pointers to the state and to the action (`nil` for a restore or an
    /// update outside any operation), valid during the call.
    @usableFromInline
    typealias Call = (_ state: UnsafeRawPointer, _ action: UnsafeRawPointer?) -> Void

    let id: UInt64
    /// The object whose lifetime bounds the subscription, for `register(observer:callback:)`.
    weak var object: AnyObject?
    /// Whether `object` was given: such an observer ends when the object is released.
    let isBoundToObject: Bool
    /// For a key-path subscription, the group that tells whether the value changed.
    let group: KeyPathGroup?
    let call: Call

    @usableFromInline
    init(id: UInt64, object: AnyObject?, group: KeyPathGroup?, call: @escaping Call) {
        self.id = id
        self.object = object
        self.isBoundToObject = object != nil
        self.group = group
        self.call = call
    }
}

/// The subscriptions to one key path of the state: one comparison per change for all of them.
///
/// `changed` is only touched under the store's delivery lock.
@usableFromInline
final class KeyPathGroup {
    /// Compares the value in the state (given by pointer) with the last one delivered; records it
    /// and returns `true` when it differs.
    @usableFromInline
    typealias Update = (_ state: UnsafeRawPointer) -> Bool

    let keyPath: AnyKeyPath
    /// The typed last and current values (a `KeyPathValues`), for subscriptions joining later.
    @usableFromInline
    let values: AnyObject
    let update: Update
    @usableFromInline
    init(keyPath: AnyKeyPath, values: AnyObject, update: @escaping Update) {
        self.keyPath = keyPath
        self.values = values
        self.update = update
    }
}

/// The last value delivered for a key path and the value of the change being delivered.
///
/// Touched only under the store's delivery lock, or under its state lock before the group is
/// published. Behind pointers, so that reading them skips the dynamic exclusivity check.
@usableFromInline
final class KeyPathValues<Value> {
    @usableFromInline
    let last: UnsafeMutablePointer<Value>
    @usableFromInline
    let current: UnsafeMutablePointer<Value>

    @usableFromInline
    init(_ value: Value) {
        last = .allocate(capacity: 1)
        last.initialize(to: value)
        current = .allocate(capacity: 1)
        current.initialize(to: value)
    }

    deinit {
        last.deinitialize(count: 1)
        last.deallocate()
        current.deinitialize(count: 1)
        current.deallocate()
    }
}

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
