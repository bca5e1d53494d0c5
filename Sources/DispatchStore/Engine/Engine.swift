import Foundation

/// The machinery under a ``Dispatcher``: its stores and middleware, the lanes that run queued
/// transactions, the runs suspended for an operation, and whether it is idle or shut down.
///
/// Nothing here calls back into the dispatcher; it is only passed to the middleware hooks that take it.
@usableFromInline
final class Engine: Sendable {
    /// What the engine's lock guards.
    struct State {
        var registry = Registry()
        /// Set when a shutdown begins: from then on every dispatch and registration is rejected.
        var isShutDown = false
        var rejectedCount = 0
    }

    let state = LockedBox(State())
    let idleness = Idleness()
    let suspendedRuns = SuspendedRuns()
    let serialLane: Lane
    let concurrentLane: Lane
    let mainLane: Lane
    let lanes: [Lane]
    /// The threads' context key, read once (`Key.shared` is a lazy global, checked on each access).
    let contextKey = ThreadContext.Key.shared

    init() {
        serialLane = Lane(kind: .serial, name: "DispatchStore.serial", idleness: idleness, suspendedRuns: suspendedRuns)
        concurrentLane = Lane(
            kind: .concurrent,
            name: "DispatchStore.async",
            idleness: idleness,
            suspendedRuns: suspendedRuns
        )
        mainLane = Lane(kind: .main, name: "DispatchStore.main", idleness: idleness, suspendedRuns: suspendedRuns)
        lanes = [serialLane, concurrentLane, mainLane]
    }

    /// Adds a store claimed for this engine's dispatcher and returns the middleware to tell; throws a
    /// ``DispatchError`` for a duplicate identifier, a `waitsFor` cycle or a shutdown.
    func register(_ store: any StoreEntry) throws -> [any Middleware] {
        let (middleware, retired) = try state.withLockedValue { state in
            if state.isShutDown { throw DispatchError.registeredAfterShutdown(store.identifier) }
            try state.registry.add(store)
            return (state.registry.middleware, state.registry.takeRetiredShortcuts())
        }
        retire(retired)
        return middleware
    }

    /// Removes the store registered under `identifier`, and returns it and the middleware to tell, if any.
    func unregister(identifier: String) -> (store: any StoreEntry, middleware: [any Middleware])? {
        let (removed, retired) = state.withLockedValue { state in
            let removed = state.registry.remove(identifier: identifier).map { ($0, state.registry.middleware) }
            return (removed, state.registry.takeRetiredShortcuts())
        }
        retire(retired)
        return removed
    }

    /// Retires shortcuts whose routes no longer stand; call without holding the engine's lock, since
    /// retiring takes each store's lock (which a reducer holds while it may dispatch).
    private func retire(_ shortcuts: [RouteShortcut]) {
        for shortcut in shortcuts { shortcut.retire() }
    }

    deinit {
        // Another engine may be made at this one's address: the shortcuts threads remember must not match it.
        retire(
            state.withLockedValue { state in
                state.registry.dropRoutes()
                return state.registry.takeRetiredShortcuts()
            }
        )
    }

    /// The store registered under `identifier`, if any.
    func store(with identifier: String) -> (any StoreEntry)? {
        state.withLockedValue { $0.registry.store(with: identifier) }
    }

    /// The registered stores, in registration order.
    var stores: [any StoreEntry] { state.withLockedValue { $0.registry.stores() } }
    /// The registered stores in registration order and in lock order, read together.
    var storesWithLockOrder: (stores: [any StoreEntry], lockOrder: [any StoreEntry]) {
        state.withLockedValue { ($0.registry.stores(), $0.registry.storesInLockOrder()) }
    }

    /// Appends a middleware; from then on, `.sync` dispatches take the engine's path, which calls it.
    func register(middleware: any Middleware) {
        retire(
            state.withLockedValue { state in
                state.registry.add(middleware)
                state.registry.dropRoutes()
                return state.registry.takeRetiredShortcuts()
            }
        )
    }
    /// Removes every registration of the middleware object `object`, and returns them.
    func unregister(middleware object: AnyObject) -> [any Middleware] {
        state.withLockedValue { $0.registry.remove(middleware: object) }
    }
    /// The registered middleware, in registration order.
    var middleware: [any Middleware] { state.withLockedValue { $0.registry.middleware } }

    /// Waits until no transaction of a lane is queued or running; see `Dispatcher.waitUntilIdle(timeout:)`.
    func waitUntilIdle(timeout: Duration?) -> Bool {
        let deadline = timeout.map { DispatchTime.now() + $0.dispatchInterval }
        let drain: (() -> Void)? = MainQueue.isCurrent ? { [mainLane] in mainLane.drainOnCurrentThread() } : nil
        return idleness.wait(until: deadline, drainMainLane: drain)
    }

    /// Whether a shutdown began: the engine takes no new actions.
    var isShutDown: Bool { state.withLockedValue { $0.isShutDown } }

    /// Begins the shutdown: no new actions or registrations from now on (idempotent); returns the lanes' counts.
    func shutDown() -> (finished: Int, cancelled: Int) {
        let (counts, retired) = state.withLockedValue { state in
            state.isShutDown = true
            state.registry.dropRoutes()
            return (laneCounts, state.registry.takeRetiredShortcuts())
        }
        retire(retired)
        return counts
    }

    /// The lanes' run counts added up: finished, and cancelled by a shutdown.
    var laneCounts: (finished: Int, cancelled: Int) {
        lanes.reduce((0, 0)) { total, lane in
            let counts = lane.counts
            return (total.0 + counts.finished, total.1 + counts.cancelled)
        }
    }

    /// How many dispatches were rejected since the shutdown began.
    var rejectedDispatches: Int { state.withLockedValue { $0.rejectedCount } }

    /// Cancels every queued or suspended run, and every one queued later, and returns how many suspended runs
    /// it cancelled (queued ones count as their lanes take them).
    func cancelInFlight() -> Int {
        for lane in lanes { lane.cancelQueuedRuns() }
        return suspendedRuns.cancelAll()
    }

    /// Abandons every run suspended for an operation, now or later, and returns how many it abandoned.
    func abandonInFlight() -> Int { suspendedRuns.abandonAll() }
}

private let transactionIDBlocks = LockedBox<UInt64>(0)

/// Reserves a block of `size` transaction ids for one thread, unique in the process without a global
/// lock per dispatch, and returns its first id and the id after its last; each block follows the last.
func reserveTransactionIDBlock(size: UInt64 = 4096) -> (UInt64, UInt64) {
    transactionIDBlocks.withLockedValue { next in
        defer { next += size }
        return (next + 1, next + 1 + size)
    }
}
