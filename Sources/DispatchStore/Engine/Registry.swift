/// The stores and middleware registered with an engine, and the routes actions take; kept under the
/// engine's lock.
///
/// (Un)registering a store costs amortized O(1) plus its `waitsFor` edges: stores sit in slots with
/// holes, compacted when holes outnumber stores, and a route is rebuilt on the first dispatch after
/// a change. Routes are immutable: a dispatch in flight keeps the one it took.
struct Registry {
    /// One registered store, and the route of a dispatch that names it with `to:`, built on the first
    /// such dispatch.
    private struct Registration {
        let store: any StoreEntry
        var route: Route?
    }

    /// The stores of one action type: their slots, and their route (`nil` until built after a change).
    private struct TypeRoute {
        var members: Set<Int> = []
        var route: Route?
    }

    /// The stores in registration order; `nil` where one was unregistered.
    private var slots: [Registration?] = []
    private var slotByIdentifier: [String: Int] = [:]
    private var holes = 0
    private var routesByType: [ObjectIdentifier: TypeRoute] = [:]
    /// How many stores declare `waitsFor`, and how often each identifier is waited for: a
    /// registration involved in a dependency may reorder other types' routes.
    private var waitingStores = 0
    private var waitedFor: [String: Int] = [:]
    /// The middleware, in registration order.
    private(set) var middleware: [any Middleware] = []
    /// The routes found most recently, by action type: hashing the type on every dispatch would cost
    /// more than the rest of an inline one (S1).
    private var recentRoutes = RecentRoutes<ObjectIdentifier>()
    /// The routes of the stores named most recently with `to:`: hashing the identifier would be most
    /// of a targeted dispatch's time under the engine's lock (S5).
    private var recentTargets = RecentRoutes<String>()
    /// The stores in registration order and in lock order, built on first use after a change: a
    /// recorder reads every store after every transaction (S8).
    private var storeList: [any StoreEntry]?
    private var lockOrderList: [any StoreEntry]?
    /// The shortcuts of the routes dropped since ``takeRetiredShortcuts()``, to retire.
    private var retiredShortcuts: [RouteShortcut] = []

    /// How many stores are registered.
    var count: Int { slots.count - holes }

    /// The registered stores, in registration order (kept until a registration changes them).
    mutating func stores() -> [any StoreEntry] {
        if let storeList { return storeList }
        let stores = slots.compactMap { $0?.store }
        storeList = stores
        return stores
    }

    /// The registered stores, in the order in which several are locked at once (``StoreEntry/lockRank``).
    mutating func storesInLockOrder() -> [any StoreEntry] {
        if let lockOrderList { return lockOrderList }
        let stores = stores().sorted { $0.lockRank < $1.lockRank }
        lockOrderList = stores
        return stores
    }

    /// The store registered under `identifier`, if any.
    func store(with identifier: String) -> (any StoreEntry)? {
        slotByIdentifier[identifier].flatMap { slots[$0]?.store }
    }

    /// The route of a dispatch naming the store `identifier`, if one is registered so.
    @inline(__always)
    mutating func route(to identifier: String) -> Route? {
        if let route = recentTargets[identifier] { return route }
        return findRoute(to: identifier)
    }

    /// The route of a dispatch naming `identifier` when it is not a recent target; remembered as one.
    private mutating func findRoute(to identifier: String) -> Route? {
        guard let slot = slotByIdentifier[identifier], let registration = slots[slot] else { return nil }
        let route =
            registration.route ?? Route(stores: [registration.store], waitsFor: [[]])
        if registration.route == nil { slots[slot]?.route = route }
        recentTargets[identifier] = route
        return route
    }

    /// Registers `store`, or throws a ``DispatchError`` when its identifier is taken or it closes a cycle.
    mutating func add(_ store: any StoreEntry) throws {
        if slotByIdentifier[store.identifier] != nil { throw DispatchError.duplicateIdentifier(store.identifier) }
        if !store.waitsFor.isEmpty, let cycle = cycle(registering: store.identifier, waitsFor: store.waitsFor) {
            throw DispatchError.dependencyCycle(cycle)
        }
        let slot = slots.count
        slots.append(Registration(store: store, route: nil))
        slotByIdentifier[store.identifier] = slot
        routesByType[ObjectIdentifier(store.actionType), default: TypeRoute()].members.insert(slot)
        changed(store, by: 1)
    }

    /// Unregisters the store registered under `identifier`, and returns it, if any.
    mutating func remove(identifier: String) -> (any StoreEntry)? {
        guard let slot = slotByIdentifier.removeValue(forKey: identifier), let store = slots[slot]?.store else {
            return nil
        }
        slots[slot] = nil
        holes += 1
        let type = ObjectIdentifier(store.actionType)
        routesByType[type]?.members.remove(slot)
        if routesByType[type]?.members.isEmpty == true {
            dropRoute(of: type)
            routesByType[type] = nil
        }
        changed(store, by: -1)
        if holes > 16 && holes * 2 > slots.count { compact() }
        return store
    }

    /// Forgets the routes a registration change may have changed.
    private mutating func changed(_ store: any StoreEntry, by delta: Int) {
        if !store.waitsFor.isEmpty { waitingStores += delta }
        for identifier in store.waitsFor {
            waitedFor[identifier, default: 0] += delta
            if waitedFor[identifier] == 0 { waitedFor[identifier] = nil }
        }
        recentRoutes = RecentRoutes()
        recentTargets = RecentRoutes()
        storeList = nil
        lockOrderList = nil
        if !store.waitsFor.isEmpty || waitedFor[store.identifier] != nil {
            // Another type's route may go through the stores this one waits for, or that wait for it.
            for type in Array(routesByType.keys) { dropRoute(of: type) }
        } else {
            dropRoute(of: ObjectIdentifier(store.actionType))
        }
    }

    /// Forgets the route of `type`, to be rebuilt on its next dispatch; its shortcut, if threads may
    /// remember it, joins ``retiredShortcuts``.
    private mutating func dropRoute(of type: ObjectIdentifier) {
        // One lookup: taken out in place.
        guard let route = routesByType[type]?.route.take() else { return }
        if let shortcut = route.shortcut, shortcut.isRemembered { retiredShortcuts.append(shortcut) }
    }

    /// Takes the shortcuts of the routes dropped since the last call, for the engine to retire once
    /// it released its lock (retiring takes a store's lock).
    mutating func takeRetiredShortcuts() -> [RouteShortcut] {
        if retiredShortcuts.isEmpty { return [] }
        defer { retiredShortcuts = [] }
        return retiredShortcuts
    }

    /// Forgets every action type's route, as when the engine changes what each dispatch must do (a
    /// middleware was added, a shutdown began): their shortcuts join ``retiredShortcuts``.
    mutating func dropRoutes() {
        recentRoutes = RecentRoutes()
        for type in Array(routesByType.keys) { dropRoute(of: type) }
    }

    /// Closes the holes left by unregistered stores, keeping registration order.
    private mutating func compact() {
        var moved: [Int: Int] = [:]
        var kept: [Registration?] = []
        kept.reserveCapacity(count)
        for (slot, registration) in slots.enumerated() {
            guard let registration else { continue }
            moved[slot] = kept.count
            slotByIdentifier[registration.store.identifier] = kept.count
            kept.append(registration)
        }
        slots = kept
        holes = 0
        for (type, entry) in routesByType {
            routesByType[type]?.members = Set(entry.members.compactMap { moved[$0] })
        }
    }

    /// The route of actions of type `type`, built if stale; `nil` when no store handles the type.
    @inline(__always)
    mutating func route(for type: ObjectIdentifier) -> Route? {
        if let route = recentRoutes[type] { return route }
        return findRoute(for: type)
    }

    /// The route of actions of type `type` when it is not among the recent ones.
    private mutating func findRoute(for type: ObjectIdentifier) -> Route? {
        guard let entry = routesByType[type] else { return nil }
        if let route = entry.route {
            recentRoutes[type] = route
            return route
        }
        let route = makeRoute(members: entry.members.sorted())
        routesByType[type]?.route = route
        recentRoutes[type] = route
        return route
    }

    /// The route over the stores at `members`: each after those it waits for; ties keep registration order.
    private func makeRoute(members: [Int]) -> Route {
        let stores = members.compactMap { slots[$0]?.store }
        guard waitingStores > 0 else {
            return Route(stores: stores, waitsFor: Array(repeating: [], count: stores.count), shortcut: true)
        }
        let position = Dictionary(uniqueKeysWithValues: stores.enumerated().map { ($1.identifier, $0) })
        // waits[i]: the positions member i waits for, transitively through registered stores.
        let waits: [[Int]] = stores.map { store in
            store.waitsFor.isEmpty ? [] : reachable(from: store.waitsFor).compactMap { position[$0] }.sorted()
        }
        // Kahn's algorithm, always taking the earliest registered store that is ready (-1: placed).
        var remaining = waits.map(\.count)
        var waiters: [[Int]] = Array(repeating: [], count: stores.count)
        for (member, waited) in waits.enumerated() {
            for dependency in waited { waiters[dependency].append(member) }
        }
        var order: [Int] = []
        while let next = remaining.firstIndex(of: 0) {
            order.append(next)
            remaining[next] = -1
            for waiter in waiters[next] { remaining[waiter] -= 1 }
        }
        precondition(order.count == stores.count, "DispatchStore: a waitsFor cycle passed registration")
        let placed = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($1, $0) })
        return Route(
            stores: order.map { stores[$0] },
            waitsFor: order.map { member in waits[member].compactMap { placed[$0] }.sorted() },
            shortcut: true
        )
    }

    /// Every identifier reachable from `start` along the registered stores' `waitsFor`.
    private func reachable(from start: [String]) -> Set<String> {
        var seen: Set<String> = []
        var stack = start
        while let identifier = stack.popLast() {
            guard seen.insert(identifier).inserted else { continue }
            stack.append(contentsOf: store(with: identifier)?.waitsFor ?? [])
        }
        return seen
    }

    /// The cycle that registering `identifier` with `waitsFor` would close (first and last the same), if any.
    func cycle(registering identifier: String, waitsFor: [String]) -> [String]? {
        var visited: Set<String> = []
        var path = [identifier]
        func visit(_ node: String) -> Bool {
            path.append(node)
            if node == identifier { return true }
            if visited.insert(node).inserted, (store(with: node)?.waitsFor ?? []).contains(where: visit) { return true }
            path.removeLast()
            return false
        }
        return waitsFor.contains(where: visit) ? path : nil
    }

    /// Appends a middleware.
    mutating func add(_ middleware: any Middleware) { self.middleware.append(middleware) }

    /// Removes every registration of the middleware object `object`, and returns them.
    mutating func remove(middleware object: AnyObject) -> [any Middleware] {
        let removed = middleware.filter { ($0 as AnyObject) === object }
        if !removed.isEmpty { middleware.removeAll { ($0 as AnyObject) === object } }
        return removed
    }
}

extension Registry {
    /// What the registry finds routes by: an action type, or the identifier a dispatch names.
    protocol RouteKey: Equatable, Sendable {
        /// A few bits that differ between keys, cheap to compute: they pick the key's recent slot.
        var recentSlot: Int { get }
    }

    /// A few routes, each in the slot a few bits of its key pick: a lookup is one comparison; a key
    /// whose slot another took is found in the registry's dictionaries.
    struct RecentRoutes<Key: RouteKey>: Sendable {
        private struct Entry {
            var key: Key?
            var route: Route?
        }

        private static var slots: Int { 8 }

        private var entries = Array(repeating: Entry(), count: Self.slots)

        subscript(key: Key) -> Route? {
            @inline(__always) get {
                entries.withUnsafeBufferPointer { entries in
                    let entry = entries[key.recentSlot & (Self.slots - 1)]
                    return entry.key == key ? entry.route : nil
                }
            }
            set { entries[key.recentSlot & (Self.slots - 1)] = Entry(key: key, route: newValue) }
        }
    }
}

extension ObjectIdentifier: Registry.RouteKey {
    /// Bits of the type's address, skipping the lowest, always zero (metadata is 8-byte aligned).
    var recentSlot: Int { Int(truncatingIfNeeded: UInt(bitPattern: self) >> 4) }
}

extension String: Registry.RouteKey {
    /// The length and the last byte (identifiers often differ only in a final number), read through
    /// `withUTF8`, which reaches the bytes directly: cheaper than hashing the string (S5).
    var recentSlot: Int {
        var bytes = self
        return bytes.withUTF8 { $0.count &* 31 &+ Int($0.last ?? 0) }
    }
}
