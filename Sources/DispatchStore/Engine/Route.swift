/// The stores an action reaches, in the order their operations start.
final class Route: Sendable {
    /// Keeps the fields off the header's cache line, whose reference count dispatching threads change
    /// while the threads running transactions read the fields.
    private let padding = CacheLinePadding()
    /// The stores, ordered so that every store comes after the ones it waits for.
    let stores: [any StoreEntry]
    /// For each store, the indices of the stores it waits for, directly or through others.
    let waitsFor: [[Int]]
    let storeIdentifiers: [String]
    /// Whether some store waits for another.
    let someStoreWaits: Bool
    /// The first store, held directly: a single-store dispatch borrows it from here.
    let first: any StoreEntry
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
        self.shortcut = shortcut && stores.count == 1 ? stores[0].makeShortcut() : nil
    }

    /// Calls `body` with the store at `index`, borrowed: the first store is read from ``first``
    /// without reference counting (S1), the others from ``stores``.
    @inline(__always)
    func withStore<Result>(at index: Int, _ body: (any StoreEntry) throws -> Result) rethrows -> Result {
        if index == 0 { return try body(first) }
        return try body(stores[index])
    }
}
