import Foundation

/// The central hub: a registry of identifier-keyed stores that routes each action to every store
/// handling its type, in one of four modes, through the registered middleware.
///
/// ```swift
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer()))
/// dispatcher.dispatch(CounterAction.increase)                    // .async
/// dispatcher.dispatch(CounterAction.add(2), mode: .sync)          // returns when done
/// dispatcher.dispatch(CounterAction.increase, mode: .serial) { result in
///     print(result.handledStores)                                 // ["counter"], exactly once
/// }
/// ```
///
/// - Note: Thread-safe: register, unregister and dispatch from any thread, including from inside
///   operations, observers and middleware. Registration changes apply to dispatches made after
///   they return; a dispatch in flight keeps the stores it reached.
public final class Dispatcher: @unchecked Sendable {
    // @unchecked: the mutable state is guarded by `lock`, which is never held while calling out.

    /// A shared dispatcher for programs that need only one.
    public static let `default` = Dispatcher()

    private let lock = Lock()
    // Guarded by `lock`, which makes the dynamic exclusivity check redundant.
    @exclusivity(unchecked) private var registry = Registry()
    @exclusivity(unchecked) private var nextTransactionID: UInt64 = 0
    @exclusivity(unchecked) private var transactionIDLimit: UInt64 = 0
    /// Registries replaced while transactions might still use their routes, kept until every lane
    /// is idle: queued runs refer to their route without counting references.
    @exclusivity(unchecked) private var retiredRegistries: [Registry] = []
    /// Set when a shutdown begins: from then on every dispatch is rejected.
    @exclusivity(unchecked) private var isClosed = false
    /// Dispatches rejected since the shutdown began.
    @exclusivity(unchecked) private var rejectedCount = 0
    /// Tasks waiting in `waitForIdle(timeout:)`, by waiter number.
    @exclusivity(unchecked) private var idleContinuations: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    @exclusivity(unchecked) private var nextIdleWaiter: UInt64 = 0
    /// The runs waiting for an operation, so that a shutdown can cancel them.
    let suspendedRuns = SuspendedRuns()

    private let idle = IdleMonitor()
    private let contextKey = ThreadContext.Key.shared
    let serialLane: Lane
    let concurrentLane: Lane
    /// Every lane.
    let lanes: [Lane]
    let mainLane: Lane

    /// Creates a dispatcher with no stores and no middleware.
    public init() {
        serialLane = Lane(kind: .serial, name: "DispatchStore.serial", idle: idle)
        concurrentLane = Lane(kind: .concurrent, name: "DispatchStore.async", idle: idle)
        mainLane = Lane(kind: .main, name: "DispatchStore.main", idle: idle)
        lanes = [serialLane, concurrentLane, mainLane]
        for lane in lanes {
            lane.attach(to: self)
        }
    }

    // MARK: Stores

    /// Registers a store, so that actions of its type reach it.
    ///
    /// - Parameter store: The store; its identifier must be unique in this dispatcher.
    /// - Throws: ``DispatchError`` with code ``DispatchError/Code/duplicateIdentifier`` when a store
    ///   is registered under the same identifier, ``DispatchError/Code/dependencyCycle`` (naming the
    ///   cycle) when its `waitsFor` closes a cycle with the stores registered so far, or
    ///   ``DispatchError/Code/storeRegisteredElsewhere`` when it belongs to another dispatcher.
    /// - Note: Middleware are told with `didRegister(store:in:)` before this returns.
    public func register<State, Action>(store: Store<State, Action>) throws {
        guard store.claim(for: ObjectIdentifier(self)) else {
            throw DispatchError.registeredElsewhere(store.identifier)
        }
        let middleware: [any Middleware]
        do {
            middleware = try lock.withLock {
                if registry.storesByIdentifier[store.identifier] != nil {
                    throw DispatchError.duplicateIdentifier(store.identifier)
                }
                if let cycle = registry.cycle(registering: store.identifier, waitsFor: store.waitsFor) {
                    throw DispatchError.dependencyCycle(cycle)
                }
                replaceRegistryLocked(with: registry.adding(store))
                return registry.middleware
            }
        } catch {
            if (error as? DispatchError)?.code != .storeRegisteredElsewhere {
                store.release(from: ObjectIdentifier(self))
            }
            throw error
        }
        for middleware in middleware {
            middleware.didRegister(store: store, in: self)
        }
    }

    /// Removes the store registered under `identifier`; the other stores stay registered.
    ///
    /// Transactions already in flight finish with the store; later dispatches no longer reach it.
    /// The store's state streams (``Store/states(bufferingNewest:)``) end.
    ///
    /// - Parameter identifier: The store's identifier.
    /// - Returns: The removed store, or `nil` when no store is registered under `identifier`.
    @discardableResult
    public func unregister(identifier: String) -> (any AnyStore)? {
        let (removed, middleware): ((any StoreEntry)?, [any Middleware]) = lock.withLock {
            guard let store = registry.storesByIdentifier[identifier] else { return (nil, []) }
            replaceRegistryLocked(with: registry.removing(identifier: identifier))
            return (store, registry.middleware)
        }
        guard let removed else { return nil }
        removed.release(from: ObjectIdentifier(self))
        removed.endStateStreams()
        for middleware in middleware {
            middleware.didUnregister(store: removed, in: self)
        }
        return removed
    }

    /// The store registered under `identifier`, if any.
    ///
    /// Cast it to its concrete type to use it:
    /// `dispatcher.store(with: "counter") as? Store<Counter, CounterAction>`.
    ///
    /// - Parameter identifier: The store's identifier.
    /// - Returns: The store, or `nil` when none is registered under `identifier`.
    public func store(with identifier: String) -> (any AnyStore)? {
        lock.withLock { registry.storesByIdentifier[identifier] }
    }

    /// The registered stores, in registration order.
    public var stores: [any AnyStore] {
        lock.withLock { registry.stores }
    }

    /// Installs a new registry, keeping the old one until the lanes are idle; call with `lock` held.
    private func replaceRegistryLocked(with newRegistry: Registry) {
        retiredRegistries.append(registry)
        registry = newRegistry
    }

    /// Called by a lane whose last outstanding transaction ended: drops the retired registries and
    /// wakes the tasks waiting for idleness once no lane has work left.
    func laneBecameIdle() {
        let (retired, waiters): ([Registry], [CheckedContinuation<Bool, Never>]) = lock.withLock {
            guard !retiredRegistries.isEmpty || !idleContinuations.isEmpty,
                lanes.allSatisfy(\.isIdle)
            else { return ([], []) }
            defer {
                retiredRegistries = []
                idleContinuations = [:]
            }
            return (retiredRegistries, Array(idleContinuations.values))
        }
        withExtendedLifetime(retired) {}
        for waiter in waiters {
            waiter.resume(returning: true)
        }
    }

    /// The registered stores as the engine sees them, in registration order.
    var storeEntries: [any StoreEntry] {
        lock.withLock { registry.stores }
    }

    // MARK: Middleware

    /// Adds a middleware after those already registered; it sees the transactions dispatched from now on.
    ///
    /// - Parameter middleware: The middleware. It is called from several threads; see ``Middleware``.
    public func register(middleware: any Middleware) {
        lock.withLock { replaceRegistryLocked(with: registry.adding(middleware)) }
        middleware.didAttach(to: self)
    }

    /// Removes a middleware object registered with ``register(middleware:)``.
    ///
    /// - Parameter middleware: The middleware instance (matched by identity).
    public func unregister(middleware: AnyObject) {
        let removed: [any Middleware] = lock.withLock {
            let removed = registry.middleware.filter { ($0 as AnyObject) === middleware }
            if !removed.isEmpty { replaceRegistryLocked(with: registry.removing(middleware: middleware)) }
            return removed
        }
        for middleware in removed {
            middleware.didDetach(from: self)
        }
    }

    /// The registered middleware, in registration order.
    public var middleware: [any Middleware] {
        lock.withLock { registry.middleware }
    }

    // MARK: Dispatching

    /// Dispatches an action to every store that handles its type, or to the one store named `to`.
    ///
    /// Each dispatch is one ``Transaction``. For each store it reaches, the reducer's operation runs
    /// in `mode`, after the operations of the stores it waits for; middleware are called before and
    /// after each. Then `completion` runs exactly once, with which stores handled the action and
    /// whether any was cancelled or failed, after every store's state is committed and its observers
    /// ran. An action that no store handles is reported the same way (``DispatchResult/isUnhandled``),
    /// as are an unknown or mismatched `to` identifier; `dispatch` itself never throws.
    ///
    /// ```swift
    /// dispatcher.dispatch(CounterAction.increase, mode: .serial) { result in
    ///     assert(result.succeeded)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - identifier: The identifier of the one store to reach; `nil` (the default) reaches every
    ///     store whose action type is the action's type.
    ///   - mode: Where and when the operations run; ``DispatchMode/async`` by default.
    ///   - timeout: How long the operations may run once started; those still running then are
    ///     cancelled and the result's error is ``DispatchError/Code/timedOut``. `nil`: no limit.
    ///   - completion: Called once when the transaction ends: on the calling thread for `.sync`
    ///     (before `dispatch` returns), on the main queue for `.mainThread`, on a dispatcher queue
    ///     otherwise.
    /// - Returns: The transaction, for its id or to cancel it.
    /// - Note: Safe from any thread. `.sync` is safe on the main thread, inside an operation and inside
    ///   an observer; it reports a re-entrant call made while the same store's state is being updated
    ///   on this thread (``DispatchError/Code/reentrantDispatch``).
    @discardableResult
    @inlinable
    public func dispatch<Action: ActionType>(
        _ action: Action,
        to identifier: String? = nil,
        mode: DispatchMode = .async,
        timeout: Duration? = nil,
        then completion: (@Sendable (DispatchResult) -> Void)? = nil
    ) -> Transaction {
        dispatch(action, to: identifier, mode: mode, timeout: timeout, startCancelled: false, then: completion)
    }

    /// The generic front of `dispatch` and `perform`.
    ///
    /// Inlined, so that the caller's module specialises this part for `Action`; the rest is not
    /// generic and costs no runtime type lookups.
    @inlinable
    func dispatch<Action: ActionType>(
        _ action: Action,
        to identifier: String?,
        mode: DispatchMode,
        timeout: Duration?,
        startCancelled: Bool,
        then completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Transaction {
        withUnsafePointer(to: action) { pointer in
            dispatch(
                pointer: UnsafeRawPointer(pointer),
                action: action,
                type: ObjectIdentifier(Action.self),
                to: identifier,
                mode: mode,
                timeout: timeout,
                startCancelled: startCancelled,
                then: completion
            )
        }
    }

    /// Dispatches the action at `pointer`, whose type is `type` (`action` is the same value, boxed).
    @usableFromInline
    func dispatch(
        pointer: UnsafeRawPointer,
        action: any ActionType,
        type: ObjectIdentifier,
        to identifier: String?,
        mode: DispatchMode,
        timeout: Duration?,
        startCancelled: Bool,
        then completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Transaction {
        // Everything read from the registry is read under the lock, so the snapshot itself need
        // not be retained.
        lock.lock()
        if _slowPath(isClosed) {
            rejectedCount += 1
            let middleware = registry.middleware
            lock.unlock()
            return reject(action, to: identifier, mode: mode, middleware: middleware, completion: completion)
        }
        if nextTransactionID == transactionIDLimit {
            (nextTransactionID, transactionIDLimit) = reserveTransactionIDBlock()
        }
        let id = nextTransactionID
        nextTransactionID += 1
        // An empty array literal shares the immortal empty storage: no reference counting.
        let middleware = registry.middleware.isEmpty ? [] : registry.middleware
        var route: Route?
        var routed = true
        if let identifier {
            route = registry.routesByIdentifier[identifier]
            routed = route != nil
        } else {
            route = registry.route(for: type)
        }
        lock.unlock()

        var routingError: DispatchError?
        if let identifier {
            if let candidate = route, ObjectIdentifier(candidate.stores[0].actionType) != type {
                let expected = "\(candidate.stores[0].actionType)"
                routingError = .actionTypeMismatch(identifier, expected: expected, action: "\(action)")
                route = nil
            } else if !routed {
                routingError = .unknownStore(identifier, action: "\(action)")
            }
        } else if route == nil {
            routingError = .unhandled(action: "\(action)", type: "\(Swift.type(of: action))")
        }

        // Without middleware nobody can cancel a single-store `.sync` dispatch while it runs (the
        // caller gets the transaction only afterwards), so it needs no transaction run.
        if mode == .sync, !startCancelled, middleware.isEmpty, let single = route, single.stores.count == 1 {
            let transaction = Transaction(
                id: id,
                action: action,
                mode: mode,
                route: route,
                targetIdentifier: identifier
            )
            runSingleStoreOnCaller(
                pointer,
                route: single,
                transaction: transaction,
                timeout: timeout,
                completion: completion
            )
            return transaction
        }
        let lane: Lane? =
            switch mode {
            case .sync: nil
            case .serial: serialLane
            case .async: concurrentLane
            case .mainThread: mainLane
            }
        let details: TransactionRun.Details? =
            identifier == nil && timeout == nil && routingError == nil
            ? nil : TransactionRun.Details(targetIdentifier: identifier, timeout: timeout, routingError: routingError)
        func configure(_ spare: TransactionRun?) -> TransactionRun {
            guard let spare else {
                return TransactionRun(
                    dispatcher: self,
                    id: id,
                    action: action,
                    mode: mode,
                    route: route,
                    middleware: middleware,
                    details: details,
                    lane: lane,
                    completion: completion,
                    cancelled: startCancelled
                )
            }
            spare.configure(
                dispatcher: self,
                id: id,
                action: action,
                mode: mode,
                route: route,
                middleware: middleware,
                details: details,
                lane: lane,
                completion: completion,
                cancelled: startCancelled
            )
            return spare
        }
        switch mode {
        case .serial, .async:
            // `route` stays referenced here until the run is queued, after which the lane keeps it.
            return withExtendedLifetime(route) { lane?.enqueueRun(configure) ?? configure(nil).transaction }
        case .mainThread where !MainQueue.isCurrent:
            return withExtendedLifetime(route) { mainLane.enqueueRun(configure) }
        case .mainThread:
            let run = configure(nil)
            mainLane.adopt()
            if run.drive() == .completed { mainLane.adoptedRunCompleted() }
            return run.transaction
        case .sync:
            let run = configure(nil)
            run.runOnCaller()
            return run.transaction
        }
    }

    /// Ends a dispatch made after the shutdown began: no store sees it; the middleware's `didFinish`
    /// and the completion get a ``DispatchError/Code/shutDown`` error, on the thread the mode promises.
    @inline(never)
    private func reject(
        _ action: any ActionType,
        to identifier: String?,
        mode: DispatchMode,
        middleware: [any Middleware],
        completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Transaction {
        let (id, _) = reserveTransactionIDBlock(size: 1)
        let details = TransactionRun.Details(
            targetIdentifier: identifier,
            timeout: nil,
            routingError: .shutDown(action: "\(action)")
        )
        let run = TransactionRun(
            dispatcher: self,
            id: id,
            action: action,
            mode: mode,
            route: nil,
            middleware: middleware,
            details: details,
            lane: nil,
            completion: completion
        )
        switch mode {
        case .sync:
            _ = run.drive()
        case .mainThread where MainQueue.isCurrent:
            _ = run.drive()
        case .mainThread:
            DispatchQueue.main.async { [self] in withExtendedLifetime(self) { _ = run.drive() } }
        case .async, .serial:
            OperationQueues.rejections.async { [self] in withExtendedLifetime(self) { _ = run.drive() } }
        }
        return run.transaction
    }

    /// The `.sync` path for an action that reaches one store, without middleware: no allocation
    /// when its reducer reduces inline and there is no completion.
    private func runSingleStoreOnCaller(
        _ action: UnsafeRawPointer,
        route: Route,
        transaction: borrowing Transaction,
        timeout: Duration?,
        completion: (@Sendable (DispatchResult) -> Void)?
    ) {
        var waiter: OperationWaiter?
        let start = route.first.beginStep(
            action,
            dependencies: { [] },
            context: ThreadContext.current(key: contextKey),
            makeFinishHook: {
                let created = OperationWaiter()
                waiter = created
                let store = route.first
                return { status in
                    if !created.deliver(status) { store.deliverPendingChanges() }
                }
            }
        )
        var status = start.status ?? .cancelled
        var needsDelivery = start.needsDelivery
        var error: DispatchError?
        if start.status == nil, let waiter {
            needsDelivery = true
            if let finished = waiter.wait(timeout: timeout) {
                status = finished
            } else {
                start.operation?.cancel()
                error = .timedOut([route.first.identifier], after: timeout ?? .zero)
            }
        }
        if needsDelivery { route.first.deliverPendingChanges() }
        guard let completion else { return }
        let outcome = StoreOutcome(storeIdentifier: route.first.identifier, status: status)
        completion(DispatchResult(transaction: copy transaction, outcomes: [outcome], error: error))
    }

    // MARK: Idleness and shutdown support

    /// Whether ``shutdown(_:timeout:)`` was called: the dispatcher takes no new actions.
    public var isShutDown: Bool {
        lock.withLock { isClosed }
    }

    /// Closes the dispatcher to new actions (idempotent).
    ///
    /// - Returns: The lanes' run counts at the instant it closed.
    func close() -> (completed: Int, cancelled: Int) {
        lock.withLock {
            isClosed = true
            return laneCounts
        }
    }

    /// The lanes' run counts added up: completed, and cancelled by a shutdown.
    var laneCounts: (completed: Int, cancelled: Int) {
        lanes.reduce((0, 0)) { total, lane in
            let counts = lane.counts
            return (total.0 + counts.completed, total.1 + counts.cancelled)
        }
    }

    /// How many dispatches were rejected since the dispatcher closed.
    var rejectedDispatches: Int {
        lock.withLock { rejectedCount }
    }

    /// Cancels every queued or waiting transaction, and every one queued later.
    ///
    /// - Returns: How many waiting transactions this cancelled (queued ones count as their lanes
    ///   take them).
    func cancelInFlight() -> Int {
        for lane in lanes {
            lane.cancelQueuedRuns()
        }
        return suspendedRuns.cancelAll()
    }

    /// Registers a task waiting until the lanes are idle.
    ///
    /// - Returns: The waiter's number, or `nil` when the lanes are idle already (the continuation was
    ///   not kept).
    func addIdleContinuation(_ continuation: CheckedContinuation<Bool, Never>) -> UInt64? {
        lock.withLock {
            if lanes.allSatisfy(\.isIdle) { return nil }
            nextIdleWaiter += 1
            idleContinuations[nextIdleWaiter] = continuation
            return nextIdleWaiter
        }
    }

    /// Resumes the waiting task `waiter` with `idle`, unless it was resumed already.
    func resumeIdleWaiter(_ waiter: UInt64, returning idle: Bool) {
        lock.withLock { idleContinuations.removeValue(forKey: waiter) }?.resume(returning: idle)
    }

    // MARK: Waiting

    /// Waits until no `.async`, `.serial` or `.mainThread` transaction is queued or running.
    ///
    /// Called on the main queue, it runs the queued `.mainThread` transactions itself while waiting.
    ///
    /// - Parameter timeout: The longest to wait; `nil` waits as long as it takes.
    /// - Returns: `true` once idle; `false` when the timeout passed first.
    /// - Note: Another thread may dispatch again right after this returns. It blocks the calling
    ///   thread: from async code, use ``waitForIdle(timeout:)``, which suspends instead.
    @available(*, noasync, message: "blocks the thread; use waitForIdle(timeout:) from async code")
    @discardableResult
    public func waitUntilIdle(timeout: Duration? = nil) -> Bool {
        let deadline = timeout.map { Date(timeIntervalSinceNow: $0.timeInterval) }
        let onMain = MainQueue.isCurrent
        for lane in lanes { lane.addIdleWaiter(1) }
        defer { for lane in lanes { lane.addIdleWaiter(-1) } }
        idle.condition.lock()
        defer { idle.condition.unlock() }
        while true {
            if onMain {
                idle.condition.unlock()
                mainLane.drainOnCurrentThread()
                idle.condition.lock()
            }
            if lanes.allSatisfy(\.isIdle) { return true }
            guard onMain || deadline != nil else {
                // No deadline: `wait(until: .distantFuture)` would overflow converting to nanoseconds.
                idle.condition.wait()
                continue
            }
            let wakeUp = onMain ? Date(timeIntervalSinceNow: 0.01) : (deadline ?? .distantFuture)
            let until = deadline.map { min($0, wakeUp) } ?? wakeUp
            if !idle.condition.wait(until: until), let deadline, Date() >= deadline {
                return lanes.allSatisfy(\.isIdle)
            }
        }
    }
}
