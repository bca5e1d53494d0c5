/// The stores an action reaches, in the order their operations start.
final class Route: @unchecked Sendable {
    // @unchecked: immutable; `otherHandles` is written once, in `init`.
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
    /// The stores' handles, unretained (each store keeps its own, and the route keeps the stores):
    /// the first here, the others in one allocation, `nil` for a route of one store (S7).
    private let firstHandle: Unmanaged<StoreHandle>
    private let otherHandles: UnsafeMutablePointer<Unmanaged<StoreHandle>>?
    /// How many stores the route reaches (at least one).
    let count: Int
    /// The type of action the stores handle.
    let actionType: ObjectIdentifier
    /// What threads remember of the route of an action type that one store handles; `nil` for the
    /// other routes, and for the route of a dispatch that names its store (`to:`).
    let shortcut: RouteShortcut?

    /// A route over `stores` (at least one), each after the ones it waits for; with a shortcut when
    /// `shortcut` is set and it reaches one store.
    init(stores: [any StoreEntry], waitsFor: [[Int]], shortcut: Bool = false) {
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
        self.firstHandle = stores[0].handle
        if stores.count > 1 {
            let others = UnsafeMutablePointer<Unmanaged<StoreHandle>>.allocate(capacity: stores.count - 1)
            for offset in 1..<stores.count { (others + offset - 1).initialize(to: stores[offset].handle) }
            otherHandles = others
        } else {
            otherHandles = nil
        }
    }

    deinit {
        otherHandles?.deallocate()
    }

    /// Calls `body` with the handle of the store at `index`, borrowed: no reference counting (S7).
    @inline(__always)
    func withHandle<Result>(at index: Int, _ body: (StoreHandle) throws -> Result) rethrows -> Result {
        let handle = index == 0 ? firstHandle : otherHandles.unsafelyUnwrapped[index - 1]
        return try handle._withUnsafeGuaranteedRef(body)
    }
}
