/// A few routes by action type, each in the slot a few bits of its type pick: a lookup is one
/// comparison, and a type whose slot another took is found in the registry's dictionary.
struct RecentRoutes {
    private struct Entry {
        var type: ObjectIdentifier?
        var route: Route?
    }

    private var entries = Array(repeating: Entry(), count: Self.slots)

    private static let slots = 8

    private static func slot(of type: ObjectIdentifier) -> Int {
        // Type metadata is at least 8-byte aligned: skip the bits that are always zero.
        Int(truncatingIfNeeded: UInt(bitPattern: type) >> 4) & (slots - 1)
    }

    subscript(type: ObjectIdentifier) -> Route? {
        @inline(__always) get {
            entries.withUnsafeBufferPointer { entries in
                let entry = entries[Self.slot(of: type)]
                return entry.type == type ? entry.route : nil
            }
        }
        set {
            entries[Self.slot(of: type)] = Entry(type: type, route: newValue)
        }
    }
}
