/// An immutable snapshot of a dispatcher's stores, middleware and routing tables.
///
/// The dispatcher swaps in a new snapshot on every registration change and reads the current one
/// under its lock on every dispatch, so routing never waits for a registration.
final class Registry: @unchecked Sendable {
    // @unchecked: immutable after init; the middleware are not Sendable, and the dispatcher carries
    // the guarantee that they may be called from several threads (documented on `Middleware`).
    let stores: [any StoreEntry]
    let storesByIdentifier: [String: any StoreEntry]
    let routesByActionType: [ObjectIdentifier: Route]
    /// The same routes as a short array, searched linearly.
    ///
    /// Comparing a few pointers is cheaper than hashing. Empty when there are many action types
    /// (the dictionary is used then).
    private let routeList: [(ObjectIdentifier, Route)]
    let routesByIdentifier: [String: Route]
    let middleware: [any Middleware]

    init(stores: [any StoreEntry] = [], middleware: [any Middleware] = []) {
        self.stores = stores
        self.middleware = middleware
        var byIdentifier: [String: any StoreEntry] = [:]
        var single: [String: Route] = [:]
        var groups: [ObjectIdentifier: [Int]] = [:]
        var groupOrder: [ObjectIdentifier] = []
        for (index, store) in stores.enumerated() {
            byIdentifier[store.identifier] = store
            single[store.identifier] = Route(stores: [store], dependencies: [[]])
            let key = ObjectIdentifier(store.actionType)
            if groups[key] == nil { groupOrder.append(key) }
            groups[key, default: []].append(index)
        }
        self.storesByIdentifier = byIdentifier
        self.routesByIdentifier = single
        var routes: [ObjectIdentifier: Route] = [:]
        for key in groupOrder {
            routes[key] = Registry.route(for: groups[key] ?? [], in: stores, byIdentifier: byIdentifier)
        }
        self.routesByActionType = routes
        self.routeList = routes.count <= 8 ? groupOrder.compactMap { key in routes[key].map { (key, $0) } } : []
    }

    /// The route of the action type `type`, if some store handles it.
    @inline(__always)
    func route(for type: ObjectIdentifier) -> Route? {
        guard routeList.isEmpty else {
            for (key, route) in routeList where key == type {
                return route
            }
            return nil
        }
        return routesByActionType[type]
    }

    func adding(_ store: any StoreEntry) -> Registry {
        Registry(stores: stores + [store], middleware: middleware)
    }

    func removing(identifier: String) -> Registry {
        Registry(stores: stores.filter { $0.identifier != identifier }, middleware: middleware)
    }

    func adding(_ middleware: any Middleware) -> Registry {
        Registry(stores: stores, middleware: self.middleware + [middleware])
    }

    func removing(middleware object: AnyObject) -> Registry {
        Registry(stores: stores, middleware: middleware.filter { ($0 as AnyObject) !== object })
    }

    /// The route over the stores at `members` (indices into `stores`, in registration order):
    /// ordered so that each store follows those it waits for, directly or through other registered
    /// stores; ties keep registration order.
    private static func route(
        for members: [Int],
        in stores: [any StoreEntry],
        byIdentifier: [String: any StoreEntry]
    ) -> Route {
        let memberIdentifiers = members.map { stores[$0].identifier }
        let position = Dictionary(uniqueKeysWithValues: memberIdentifiers.enumerated().map { ($1, $0) })
        // waits[i]: positions (in `members`) that member i waits for, transitively.
        let waits: [Set<Int>] = members.map { index in
            Set(reachable(from: stores[index].waitsFor, byIdentifier: byIdentifier).compactMap { position[$0] })
        }
        var placed: [Int] = []
        var isPlaced = [Bool](repeating: false, count: members.count)
        while placed.count < members.count {
            guard
                let next = (0..<members.count).first(where: { candidate in
                    !isPlaced[candidate] && waits[candidate].allSatisfy { isPlaced[$0] }
                })
            else {
                preconditionFailure("DispatchStore: waitsFor cycle among \(memberIdentifiers) passed registration")
            }
            isPlaced[next] = true
            placed.append(next)
        }
        let order = Dictionary(uniqueKeysWithValues: placed.enumerated().map { ($1, $0) })
        let dependencies = placed.map { member in waits[member].compactMap { order[$0] }.sorted() }
        return Route(stores: placed.map { stores[members[$0]] }, dependencies: dependencies)
    }

    /// Every identifier reachable from `start` along the registered stores' `waitsFor`.
    private static func reachable(from start: [String], byIdentifier: [String: any StoreEntry]) -> Set<String> {
        var seen: Set<String> = []
        var stack = start
        while let identifier = stack.popLast() {
            guard seen.insert(identifier).inserted else { continue }
            stack.append(contentsOf: byIdentifier[identifier]?.waitsFor ?? [])
        }
        return seen
    }

    /// The cycle that registering a store with `identifier` and `waitsFor` would close, as the
    /// identifiers along it (first and last the same), or `nil`.
    func cycle(registering identifier: String, waitsFor: [String]) -> [String]? {
        var visited: Set<String> = []
        var path = [identifier]

        func visit(_ node: String) -> Bool {
            if node == identifier {
                path.append(node)
                return true
            }
            guard visited.insert(node).inserted else { return false }
            path.append(node)
            for next in storesByIdentifier[node]?.waitsFor ?? [] where visit(next) {
                return true
            }
            path.removeLast()
            return false
        }

        for next in waitsFor where visit(next) {
            return path
        }
        return nil
    }
}
