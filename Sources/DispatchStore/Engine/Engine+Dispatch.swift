import Foundation

extension Engine {
    /// Dispatches the action at `pointer`, whose type is `type` (`action` is the same value, boxed);
    /// see `Dispatcher.dispatch(_:to:mode:timeout:then:)`.
    ///
    /// - Parameters:
    ///   - pointer: The action, valid during the call.
    ///   - action: The same action, boxed.
    ///   - type: The action's type.
    ///   - identifier: The one store to reach, if any.
    ///   - mode: Where and when the operations run.
    ///   - timeout: How long the operations may run once started.
    ///   - startCancelled: Whether the transaction starts cancelled.
    ///   - owner: The dispatcher, handed to the middleware's `didFinish`.
    ///   - completion: Called once when the transaction ends.
    /// - Returns: The transaction.
    func dispatch(
        pointer: UnsafeRawPointer,
        action: any ActionType,
        type: ObjectIdentifier,
        to identifier: String?,
        mode: DispatchMode,
        timeout: Duration?,
        startCancelled: Bool,
        owner: Dispatcher,
        then completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Transaction {
        state.lock()
        let (id, middleware, route, routed, closed) = state.withValueWhileLocked { state in
            if _slowPath(state.isClosed) {
                state.rejectedCount += 1
                return (UInt64(0), state.registry.middleware, Route?.none, false, true)
            }
            if state.nextTransactionID == state.transactionIDLimit {
                (state.nextTransactionID, state.transactionIDLimit) = reserveTransactionIDBlock()
            }
            let id = state.nextTransactionID
            state.nextTransactionID += 1
            // An empty array literal shares the immortal empty storage: no reference counting.
            let middleware = state.registry.middleware.isEmpty ? [] : state.registry.middleware
            if let identifier {
                let route = state.registry.routesByIdentifier[identifier]
                return (id, middleware, route, route != nil, false)
            }
            return (id, middleware, state.registry.route(for: type), true, false)
        }
        state.unlock()
        if _slowPath(closed) {
            return reject(action, to: identifier, mode: mode, middleware: middleware, owner: owner, then: completion)
        }

        var reached = route
        var routingError: DispatchError?
        if let identifier {
            if let candidate = route, ObjectIdentifier(candidate.stores[0].actionType) != type {
                let expected = "\(candidate.stores[0].actionType)"
                routingError = .actionTypeMismatch(identifier, expected: expected, action: "\(action)")
                reached = nil
            } else if !routed {
                routingError = .unknownStore(identifier, action: "\(action)")
            }
        } else if route == nil {
            routingError = .unhandled(action: "\(action)", type: "\(Swift.type(of: action))")
        }

        // Without middleware nobody can cancel a single-store `.sync` dispatch while it runs (the
        // caller gets the transaction only afterwards), so it needs no transaction run.
        if mode == .sync, !startCancelled, middleware.isEmpty, let single = reached, single.stores.count == 1 {
            let transaction = Transaction(
                id: id,
                action: action,
                mode: mode,
                route: single,
                targetIdentifier: identifier
            )
            runSingleStoreOnCaller(pointer, route: single, transaction: transaction, timeout: timeout, then: completion)
            return transaction
        }
        let configuration = RunConfiguration(
            id: id,
            action: action,
            mode: mode,
            route: reached,
            middleware: middleware,
            owner: middleware.isEmpty ? nil : owner,
            completion: completion,
            targetIdentifier: identifier,
            startsCancelled: startCancelled,
            details: timeout == nil && routingError == nil
                ? nil : RunConfiguration.Details(timeout: timeout, routingError: routingError)
        )
        switch mode {
        case .serial:
            return serialLane.enqueue(configuration)
        case .async:
            return concurrentLane.enqueue(configuration)
        case .mainThread where !MainQueue.isCurrent:
            return mainLane.enqueue(configuration)
        case .mainThread:
            let run = TransactionRun(lane: mainLane, configuration: configuration)
            mainLane.adopt()
            if run.drive() == .completed { mainLane.adoptedRunCompleted() }
            return run.transaction
        case .sync:
            let run = TransactionRun(lane: nil, configuration: configuration)
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
        owner: Dispatcher,
        then completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Transaction {
        let (id, _) = reserveTransactionIDBlock(size: 1)
        let run = TransactionRun(
            lane: nil,
            configuration: RunConfiguration(
                id: id,
                action: action,
                mode: mode,
                route: nil,
                middleware: middleware,
                owner: middleware.isEmpty ? nil : owner,
                completion: completion,
                targetIdentifier: identifier,
                startsCancelled: false,
                details: RunConfiguration.Details(timeout: nil, routingError: .shutDown(action: "\(action)"))
            )
        )
        switch mode {
        case .sync:
            _ = run.drive()
        case .mainThread where MainQueue.isCurrent:
            _ = run.drive()
        case .mainThread:
            DispatchQueue.main.async { _ = run.drive() }
        case .async, .serial:
            OperationQueues.rejections.async { _ = run.drive() }
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
        then completion: (@Sendable (DispatchResult) -> Void)?
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

    /// The key of the calling thread's context.
    private var contextKey: ThreadContext.Key {
        ThreadContext.Key.shared
    }
}
