import Foundation

/// The machinery under a ``Dispatcher``: its stores and middleware, the lanes that run queued
/// transactions, the runs waiting for an operation, and whether it is idle or shut down.
///
/// The dispatcher is the public front; nothing here calls back up into it. The dispatcher object is
/// only passed along, as an argument, to the middleware hooks that take it.
@usableFromInline
final class Engine: Sendable {
    /// What the engine's lock guards.
    struct State {
        var registry = Registry()
        /// The next transaction id, from a block reserved for this engine.
        var nextTransactionID: UInt64 = 0
        var transactionIDLimit: UInt64 = 0
        /// Set when a shutdown begins: from then on every dispatch and registration is rejected.
        var isClosed = false
        /// Dispatches rejected since the shutdown began.
        var rejectedCount = 0
    }

    let state = LockedBox(State())
    let idleness = Idleness()
    let suspendedRuns = SuspendedRuns()
    let serialLane: Lane
    let concurrentLane: Lane
    let mainLane: Lane
    /// Every lane.
    let lanes: [Lane]
    /// The key of the threads' contexts, read once (`Key.shared` is a lazy global, checked on each access).
    let contextKey = ThreadContext.Key.shared

    init() {
        serialLane = Lane(
            kind: .serial,
            name: "DispatchStore.serial",
            idleness: idleness,
            suspendedRuns: suspendedRuns
        )
        concurrentLane = Lane(
            kind: .concurrent,
            name: "DispatchStore.async",
            idleness: idleness,
            suspendedRuns: suspendedRuns
        )
        mainLane = Lane(kind: .main, name: "DispatchStore.main", idleness: idleness, suspendedRuns: suspendedRuns)
        lanes = [serialLane, concurrentLane, mainLane]
    }

    // MARK: Registration

    /// Adds a store, already claimed for this engine's dispatcher.
    ///
    /// - Returns: The middleware to tell.
    /// - Throws: ``DispatchError`` for a duplicate identifier, a `waitsFor` cycle, or a dispatcher
    ///   that was shut down.
    func register(_ store: any StoreEntry) throws -> [any Middleware] {
        try state.withLockedValue { state in
            if state.isClosed { throw DispatchError.registeredAfterShutdown(store.identifier) }
            try state.registry.add(store)
            return state.registry.middleware
        }
    }

    /// Removes the store registered under `identifier`.
    ///
    /// - Returns: The removed store and the middleware to tell, or `nil` when none is registered so.
    func unregister(identifier: String) -> (store: any StoreEntry, middleware: [any Middleware])? {
        state.withLockedValue { state in
            state.registry.remove(identifier: identifier).map { ($0, state.registry.middleware) }
        }
    }

    /// The store registered under `identifier`, if any.
    func store(with identifier: String) -> (any StoreEntry)? {
        state.withLockedValue { $0.registry.store(with: identifier) }
    }

    /// The registered stores, in registration order.
    var stores: [any StoreEntry] {
        state.withLockedValue { $0.registry.stores() }
    }

    /// The registered stores in registration order, and the same stores in the order in which
    /// several are locked at once, read together.
    var storesWithLockOrder: (stores: [any StoreEntry], lockOrder: [any StoreEntry]) {
        state.withLockedValue { ($0.registry.stores(), $0.registry.storesInLockOrder()) }
    }

    /// Appends a middleware.
    func register(middleware: any Middleware) {
        state.withLockedValue { $0.registry.add(middleware) }
    }

    /// Removes every registration of the middleware object `object`.
    ///
    /// - Returns: The middleware removed.
    func unregister(middleware object: AnyObject) -> [any Middleware] {
        state.withLockedValue { $0.registry.remove(middleware: object) }
    }

    /// The registered middleware, in registration order.
    var middleware: [any Middleware] {
        state.withLockedValue { $0.registry.middleware }
    }

    // MARK: Idleness

    /// Waits until no `.async`, `.serial` or `.mainThread` transaction is queued or running; see
    /// `Dispatcher.waitUntilIdle(timeout:)`.
    func waitUntilIdle(timeout: Duration?) -> Bool {
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0.timeInterval) }
        let drain: (() -> Void)? = MainQueue.isCurrent ? { [mainLane] in mainLane.drainOnCurrentThread() } : nil
        return idleness.wait(until: deadline, drainMainLane: drain)
    }
}
