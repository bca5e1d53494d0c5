/// The stores an action reaches, in the order their operations start.
final class Route: @unchecked Sendable {
    // @unchecked: immutable; `handles` is written once, in `init`.
    /// Keeps the fields off the header's cache line, whose reference count dispatching threads change
    /// while the threads running transactions read the fields.
    private let padding = CacheLinePadding()
    /// The stores, ordered so that every store comes after the ones it waits for.
    let stores: [any StoreEntry]
    /// For each store, the indices of the stores it waits for, directly or through others.
    let waitsFor: [[Int]]
    /// The same, as the machine reads it; `nil` when no store waits for another.
    let waitsForTable: WaitsForTable?
    let storeIdentifiers: [String]
    /// Whether some store waits for another.
    let someStoreWaits: Bool
    /// The first store (what a targeted dispatch checks its action type against).
    let first: any StoreEntry
    /// The first store's handle (its registration's), borrowed from here (S1, R2).
    private let firstHandle: StoreHandle
    /// The other stores' handles, in one allocation, read without reference counting (S7); `nil` for
    /// a route of one store.
    private let otherHandles: UnsafeMutablePointer<StoreHandle>?
    /// How many stores the route reaches (at least one).
    let count: Int
    /// The type of action the stores handle.
    let actionType: ObjectIdentifier
    /// What threads remember of the route of an action type that one store handles; `nil` for the
    /// other routes, and for the route of a dispatch that names its store (`to:`).
    let shortcut: RouteShortcut?

    /// A route over `stores` (at least one), reached through `handles`, each after the ones it waits
    /// for; with a shortcut when `shortcut` is set and it reaches one store.
    init(stores: [any StoreEntry], handles: [StoreHandle], waitsFor: [[Int]], shortcut: Bool = false) {
        precondition(!stores.isEmpty, "DispatchStore: a route reaches at least one store")
        self.first = stores[0]
        self.count = stores.count
        self.actionType = ObjectIdentifier(stores[0].actionType)
        self.stores = stores
        self.waitsFor = waitsFor
        self.storeIdentifiers = stores.map(\.identifier)
        self.someStoreWaits = waitsFor.contains { !$0.isEmpty }
        self.waitsForTable = someStoreWaits ? WaitsForTable(waitsFor) : nil
        self.shortcut = shortcut && stores.count == 1 ? stores[0].makeShortcut() : nil
        self.firstHandle = handles[0]
        if handles.count > 1 {
            let others = UnsafeMutablePointer<StoreHandle>.allocate(capacity: handles.count - 1)
            for (offset, handle) in handles.dropFirst().enumerated() { (others + offset).initialize(to: handle) }
            otherHandles = others
        } else {
            otherHandles = nil
        }
    }

    deinit {
        otherHandles?.deinitialize(count: count - 1)
        otherHandles?.deallocate()
    }

    /// Calls `body` with the handle of the store at `index`, borrowed: the first from its property,
    /// the others read as unmanaged references, with no reference counting (S7).
    @inline(__always)
    func withHandle<Result>(at index: Int, _ body: (StoreHandle) throws -> Result) rethrows -> Result {
        if index == 0 { return try body(firstHandle) }
        let other = UnsafeRawPointer(otherHandles.unsafelyUnwrapped + (index - 1))
        return try other.load(as: Unmanaged<StoreHandle>.self)._withUnsafeGuaranteedRef(body)
    }
}
