/// A few routes by key (an action type, or the identifier a dispatch names), each in the slot a few
/// bits of its key pick: a lookup is one comparison, and a key whose slot another took is found in
/// the registry's dictionaries.
struct RecentRoutes<Key: RouteKey>: Sendable {
    private struct Entry {
        var key: Key?
        var route: Route?
    }

    private var entries = Array(repeating: Entry(), count: Self.slots)

    private static var slots: Int {
        8
    }

    subscript(key: Key) -> Route? {
        @inline(__always) get {
            entries.withUnsafeBufferPointer { entries in
                let entry = entries[key.recentSlot & (Self.slots - 1)]
                return entry.key == key ? entry.route : nil
            }
        }
        set {
            entries[key.recentSlot & (Self.slots - 1)] = Entry(key: key, route: newValue)
        }
    }
}
