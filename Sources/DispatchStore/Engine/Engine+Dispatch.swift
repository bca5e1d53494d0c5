import Foundation

extension Engine {
    /// Dispatches the action at `pointer` of type `actionType` `.sync`, for a caller that reads nothing
    /// but the transaction returned (no `to:`, no timeout, no completion).
    ///
    /// Through the thread's shortcut for the action's type when it has one (``RouteShortcut``): no
    /// engine lock, no transaction run. Otherwise, or when the shortcut no longer stands, as any
    /// dispatch, which gives the thread a shortcut when the route allows one.
    @usableFromInline
    func dispatchSync(pointer: UnsafeRawPointer, type actionType: any ActionType.Type, owner: Dispatcher) -> Dispatched
    {
        let context = ThreadContext.current(key: contextKey)
        let type = ObjectIdentifier(actionType)
        if let shortcut = context.shortcut(engine: ObjectIdentifier(self), type: type) {
            let passage = shortcut._withUnsafeGuaranteedRef { $0.dispatch(pointer, context: context) }
            switch passage {
            case .reduced:
                let identifier = shortcut._withUnsafeGuaranteedRef { $0.storeIdentifier }
                return Dispatched(id: context.takeTransactionID(), links: .store(identifier))
            case .reducedReleasing:
                let identifier = shortcut._withUnsafeGuaranteedRef { $0.storeIdentifier }
                withExtendedLifetime(context.takeLeftOver()) {}
                return Dispatched(id: context.takeTransactionID(), links: .store(identifier))
            case .retired: context.forgetShortcut(engine: ObjectIdentifier(self), type: type)
            case .reentrant: break
            // The operation the reducer returned waits in the context, for the engine's path.
            case .operation: break
            }
        }
        return dispatch(
            pointer: pointer,
            type: actionType,
            to: nil,
            mode: .sync,
            timeout: nil,
            startCancelled: false,
            awaited: false,
            owner: owner,
            then: nil,
            fromShortcut: true
        )
    }

    /// Dispatches the action at `pointer` of type `actionType` through the engine's lock, the registry
    /// and a transaction run; see `Dispatcher.dispatch(_:to:mode:timeout:then:)`.
    ///
    /// The action is boxed only for a transaction the engine keeps: a box made by the caller would
    /// stall on bytes still being stored (S1). `awaited` (`perform`): a `.sync` dispatch never blocks
    /// the caller; an operation still running finishes the transaction on its own thread.
    /// `fromShortcut`: a `.sync` dispatch that ``dispatchSync(pointer:type:owner:)`` could not finish
    /// through a shortcut; the thread gets the route's shortcut, if it has one and no middleware is
    /// registered, and the operation the shortcut's reducer returned, if any, waits in the thread's
    /// context (``ThreadContext/LeftOver``).
    @usableFromInline
    func dispatch(
        pointer: UnsafeRawPointer,
        type actionType: any ActionType.Type,
        to identifier: String?,
        mode: DispatchMode,
        timeout: Duration?,
        startCancelled: Bool,
        awaited: Bool,
        owner: Dispatcher,
        then completion: (@Sendable (DispatchResult) -> Void)?,
        fromShortcut: Bool = false
    ) -> Dispatched {
        let context = ThreadContext.current(key: contextKey)
        let prepared = fromShortcut ? context.takeLeftOver().prepared : nil
        let type = ObjectIdentifier(actionType)
        // The registry is read in place: a tuple returned from a closure would copy the middleware (S1).
        state.lock()
        let engine = state.valuePointer
        if _slowPath(engine.pointee.isShutDown) {
            engine.pointee.rejectedCount += 1
            let middleware = engine.pointee.registry.middleware
            state.unlock()
            return reject(
                boxedAction(at: pointer, of: actionType),
                id: context.takeTransactionID(),
                to: identifier,
                mode: mode,
                middleware: middleware,
                owner: owner,
                then: completion
            )
        }
        // `nil` rather than an empty array, so that a run has no array to release (S1).
        let hasMiddleware = !engine.pointee.registry.middleware.isEmpty
        let middleware = hasMiddleware ? engine.pointee.registry.middleware : nil
        var route: Route?
        if let identifier {
            route = engine.pointee.registry.route(to: identifier)
        } else {
            route = engine.pointee.registry.route(for: type)
        }
        var shortcut: RouteShortcut?
        if fromShortcut && !hasMiddleware, let candidate = route?.shortcut {
            candidate.isRemembered = true
            shortcut = candidate
        }
        state.unlock()
        if let shortcut { context.remember(shortcut, engine: ObjectIdentifier(self), type: type) }
        let id = context.takeTransactionID()
        var details: TransactionRun.Details?
        // A route found by `to:` may not handle `type`: checked here, so a targeted dispatch makes no call (S5).
        if _slowPath(route?.actionType != type || timeout != nil || prepared != nil) {
            details = Self.details(
                of: pointer,
                actionType,
                to: identifier,
                timeout: timeout,
                prepared: prepared,
                route: &route
            )
        }
        if mode == .sync && !awaited {
            // The stores read the action in the caller's frame; a transaction is kept only for a reader (S1).
            let readsResult = hasMiddleware || completion != nil
            let run = context.takeSyncRun()
            if readsResult {
                run.setTransaction(
                    Transaction(
                        id: id,
                        action: boxedAction(at: pointer, of: actionType),
                        mode: mode,
                        targetIdentifier: identifier,
                        links: .none
                    )
                )
            }
            run.configure(
                route: consume route,
                configuration: TransactionRun.Configuration(
                    middleware: consume middleware,
                    owner: hasMiddleware ? owner : nil,
                    completion: completion,
                    details: consume details,
                    actionPointer: pointer,
                    hasMiddleware: hasMiddleware,
                    readsResult: readsResult,
                    startsCancelled: startCancelled
                )
            )
            run.runOnCaller(suspendedRuns: suspendedRuns, context: context)
            // Moved, not copied (a `var` is retained around the drive); unshared, it is referenced only here (S1).
            var finished = consume run
            let unique = !finished.body.pointee.isShared || isKnownUniquelyReferenced(&finished)
            if unique, let route = finished.clearForReuse() {
                context.giveBackSyncRun(consume finished)
                return Dispatched(id: id, links: Transaction.Links(route: route))
            }
            context.giveBackSyncRun(nil)
            return Dispatched(id: id, links: Transaction.Links(route: finished.route))
        }
        // A `let`, so that the lanes consume it without a copy.
        let transaction = Transaction(
            id: id,
            action: boxedAction(at: pointer, of: actionType),
            mode: mode,
            targetIdentifier: identifier,
            links: .none
        )
        let configuration = TransactionRun.Configuration(
            middleware: consume middleware,
            owner: hasMiddleware ? owner : nil,
            completion: completion,
            details: consume details,
            hasMiddleware: hasMiddleware,
            readsResult: hasMiddleware || completion != nil,
            startsCancelled: startCancelled,
            // Awaited (`perform`), a `.sync` run lets the thread that finishes its operation go on.
            blocksCaller: mode != .sync
        )
        switch mode {
        case .serial:
            return Dispatched(
                id: id,
                run: serialLane.enqueue(consume transaction, consume route, consume configuration)
            )
        case .async:
            return Dispatched(
                id: id,
                run: concurrentLane.enqueue(consume transaction, consume route, consume configuration)
            )
        case .mainThread where !MainQueue.isCurrent:
            return Dispatched(id: id, run: mainLane.enqueue(consume transaction, consume route, consume configuration))
        case .mainThread:
            let run = TransactionRun.make(lane: mainLane)
            run.configure(transaction: consume transaction, route: consume route, configuration: consume configuration)
            mainLane.adopt()
            if run.drive(suspendedRuns: suspendedRuns) == .finished { mainLane.adoptedRunFinished() }
            return Dispatched(id: id, run: run)
        case .sync:
            // Awaited (`perform`): the run may outlive this frame; it reads the action from the transaction.
            let run = TransactionRun.make(lane: nil)
            run.configure(transaction: consume transaction, route: consume route, configuration: consume configuration)
            _ = run.drive(suspendedRuns: suspendedRuns, context: context)
            return Dispatched(id: id, run: run)
        }
    }

    /// The transaction's id and links, which `dispatch` hands back in registers: the caller builds
    /// the transaction in place (S1).
    @usableFromInline
    struct Dispatched {
        @usableFromInline
        let id: UInt64
        /// The route, or the run that can cancel the transaction.
        @usableFromInline
        let links: Transaction.Links

        /// A transaction with `links`.
        init(id: UInt64, links: consuming Transaction.Links) {
            self.id = id
            self.links = links
        }

        /// A queued or shared transaction: its run, which holds the route.
        init(id: UInt64, run: TransactionRun) {
            self.init(id: id, links: .run(TransactionRun.Reference(run: run)))
        }

        /// The action as the run keeps it, boxed, or `nil`: a caller with an action too large for an
        /// existential's inline buffer shares the run's box rather than allocating a second one.
        @usableFromInline
        var runAction: (any ActionType)? { links.run?.run.action }
    }

    /// The details of a dispatch with a `timeout` or that reaches no store (an unknown `identifier`,
    /// one that does not handle the type, which clears `route`, or a type nobody handles), or `nil`;
    /// out of line, so that the common dispatch never holds a ``DispatchError`` (S1).
    @inline(never)
    private static func details(
        of pointer: UnsafeRawPointer,
        _ actionType: any ActionType.Type,
        to identifier: String?,
        timeout: Duration?,
        prepared: TransactionRun.PreparedStep?,
        route: inout Route?
    ) -> TransactionRun.Details? {
        let type = ObjectIdentifier(actionType)
        // Boxed only for a message: a dispatch with a timeout alone needs none.
        var action: String { "\(boxedAction(at: pointer, of: actionType))" }
        var routingError: DispatchError?
        switch (identifier, route) {
        case (let identifier?, let candidate?) where candidate.actionType != type:
            routingError = .actionTypeMismatch(identifier, expected: "\(candidate.first.actionType)", action: action)
            route = nil
        case (let identifier?, nil): routingError = .unknownStore(identifier, action: action)
        case (nil, nil): routingError = .unhandled(action: action, type: "\(actionType)")
        default: break
        }
        guard timeout != nil || routingError != nil || prepared != nil else { return nil }
        return TransactionRun.Details(timeout: timeout, routingError: routingError, prepared: prepared)
    }

    /// Ends a dispatch made after the shutdown began, on the thread its mode promises: no store sees it;
    /// its result has a ``DispatchError/Code/shutDown`` error.
    @inline(never)
    private func reject(
        _ action: any ActionType,
        id: UInt64,
        to identifier: String?,
        mode: DispatchMode,
        middleware: [any Middleware],
        owner: Dispatcher,
        then completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Dispatched {
        let run = TransactionRun.make(lane: nil)
        run.configure(
            transaction: Transaction(
                id: id,
                action: action,
                mode: mode,
                targetIdentifier: identifier,
                links: .none
            ),
            route: nil,
            configuration: TransactionRun.Configuration(
                middleware: middleware.isEmpty ? nil : middleware,
                owner: middleware.isEmpty ? nil : owner,
                completion: completion,
                details: TransactionRun.Details(timeout: nil, routingError: .shutDown(action: "\(action)")),
                hasMiddleware: !middleware.isEmpty,
                readsResult: !middleware.isEmpty || completion != nil,
                startsCancelled: false
            )
        )
        switch mode {
        case .sync:
            _ = run.drive(suspendedRuns: nil)
        case .mainThread where MainQueue.isCurrent:
            _ = run.drive(suspendedRuns: nil)
        case .mainThread:
            let reference = TransactionRun.Reference(run: run)
            DispatchQueue.main.async { _ = reference.run.drive(suspendedRuns: nil) }
        case .async, .serial:
            let reference = TransactionRun.Reference(run: run)
            OperationQueues.rejections.async { _ = reference.run.drive(suspendedRuns: nil) }
        }
        return Dispatched(id: id, run: run)
    }
}
