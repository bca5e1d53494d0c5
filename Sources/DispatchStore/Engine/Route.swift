/// The stores an action reaches, in the order their operations start.
final class Route: Sendable {
    /// Keeps the fields below off the cache line of the object's header: the dispatching thread
    /// changes the reference count there while the threads running transactions read the fields.
    private let padding = CacheLinePadding()
    /// The stores, ordered so that every store comes after the ones it waits for.
    let stores: [any StoreEntry]
    /// For each store, the indices of the stores it waits for, directly or through other
    /// stores' `waitsFor`.
    let dependencies: [[Int]]
    let storeIdentifiers: [String]
    /// Whether some store waits for another.
    let hasDependencies: Bool
    /// The first store, held directly: a single-store dispatch borrows it from here.
    let first: any StoreEntry

    init(stores: [any StoreEntry], dependencies: [[Int]]) {
        precondition(!stores.isEmpty, "DispatchStore: a route reaches at least one store")
        self.first = stores[0]
        self.stores = stores
        self.dependencies = dependencies
        self.storeIdentifiers = stores.map(\.identifier)
        self.hasDependencies = dependencies.contains { !$0.isEmpty }
    }
}
