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
    ///   - awaited: Whether a task awaits the completion (`perform`): a `.sync` dispatch then starts
    ///     its operations on the calling thread but never blocks it; an operation still running
    ///     finishes the transaction on its own thread, and the transaction can be cancelled meanwhile.
    ///   - owner: The dispatcher, handed to the middleware's `didFinish`.
    ///   - completion: Called once when the transaction ends.
    /// - Returns: The transaction.
    @usableFromInline
    func dispatch(
        pointer: UnsafeRawPointer,
        action: any ActionType,
        type: ObjectIdentifier,
        to identifier: String?,
        mode: DispatchMode,
        timeout: Duration?,
        startCancelled: Bool,
        awaited: Bool,
        owner: Dispatcher,
        then completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Transaction {
        // The registry is read in place, under the lock: a tuple returned from a closure would copy
        // the middleware array (S1).
        state.lock()
        let engine = state.valuePointer
        if _slowPath(engine.pointee.isClosed) {
            engine.pointee.rejectedCount += 1
            let middleware = engine.pointee.registry.middleware
            state.unlock()
            return reject(action, to: identifier, mode: mode, middleware: middleware, owner: owner, then: completion)
        }
        if engine.pointee.nextTransactionID == engine.pointee.transactionIDLimit {
            (engine.pointee.nextTransactionID, engine.pointee.transactionIDLimit) = reserveTransactionIDBlock()
        }
        let id = engine.pointee.nextTransactionID
        engine.pointee.nextTransactionID += 1
        // An empty array literal shares the immortal empty storage: no reference counting.
        let middleware = engine.pointee.registry.middleware.isEmpty ? [] : engine.pointee.registry.middleware
        let route: Route?
        if let identifier {
            route = engine.pointee.registry.route(to: identifier)
        } else {
            route = engine.pointee.registry.route(for: type)
        }
        state.unlock()
        let routed = identifier == nil || route != nil

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

        var transaction = Transaction(
            id: id,
            action: action,
            mode: mode,
            targetIdentifier: identifier,
            route: reached,
            run: nil
        )
        let details =
            timeout == nil && routingError == nil
            ? nil : RunConfiguration.Details(timeout: timeout, routingError: routingError)
        if mode == .sync && middleware.isEmpty && !startCancelled && !awaited {
            // Nothing else can reach the transaction: run it on this stack.
            runInline(&transaction, completion: completion, details: details, action: pointer)
            return transaction
        }
        var configuration = RunConfiguration(
            middleware: middleware,
            owner: middleware.isEmpty ? nil : owner,
            completion: completion,
            details: details,
            startsCancelled: startCancelled
        )
        switch mode {
        case .serial:
            return serialLane.enqueue(consume transaction, consume configuration)
        case .async:
            return concurrentLane.enqueue(consume transaction, consume configuration)
        case .mainThread where !MainQueue.isCurrent:
            return mainLane.enqueue(consume transaction, consume configuration)
        case .mainThread:
            let run = TransactionRun.make(lane: mainLane, transaction: transaction, configuration: configuration)
            mainLane.adopt()
            if run.drive(suspendedRuns: suspendedRuns) == .completed { mainLane.adoptedRunCompleted() }
            return run.cancellableTransaction()
        case .sync where awaited:
            // The run may outlive this frame: it reads the action from the transaction.
            configuration.blocksCaller = false
            let run = TransactionRun.make(lane: nil, transaction: transaction, configuration: configuration)
            _ = run.drive(suspendedRuns: suspendedRuns, context: ThreadContext.current(key: contextKey))
            return run.cancellableTransaction()
        case .sync:
            // The caller's frame holds the action until the run completes.
            configuration.actionPointer = pointer
            let run = TransactionRun.make(lane: nil, transaction: transaction, configuration: configuration)
            run.runOnCaller(suspendedRuns: suspendedRuns, context: ThreadContext.current(key: contextKey))
            return run.resultTransaction
        }
    }

    /// Runs a `.sync` transaction that nothing else can reach on the caller's stack, to the end.
    private func runInline(
        _ transaction: inout Transaction,
        completion: (@Sendable (DispatchResult) -> Void)?,
        details: RunConfiguration.Details?,
        action: UnsafeRawPointer
    ) {
        let count = transaction.route?.stores.count ?? 0
        let context = ThreadContext.current(key: contextKey)
        var frame = InlineRun.Frame(completion: completion, details: details)
        withUnsafeTemporaryAllocation(of: TransactionMachine.Step.self, capacity: max(count, 1)) { steps in
            var machine = TransactionMachine(
                steps: steps.baseAddress.unsafelyUnwrapped,
                count: count,
                reportsNeedWork: false,
                cancelled: false
            )
            withUnsafeMutablePointer(to: &machine) { machine in
                withUnsafeMutablePointer(to: &transaction) { transaction in
                    withUnsafeMutablePointer(to: &frame) { frame in
                        var host = InlineRun(
                            machine: machine,
                            transaction: transaction,
                            frame: frame,
                            actionPointer: action
                        )
                        _ = RunDriver.drive(&host, suspendedRuns: suspendedRuns, context: context)
                    }
                }
            }
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
        let run = TransactionRun.make(
            lane: nil,
            transaction: Transaction(
                id: id,
                action: action,
                mode: mode,
                targetIdentifier: identifier,
                route: nil,
                run: nil
            ),
            configuration: RunConfiguration(
                middleware: middleware,
                owner: middleware.isEmpty ? nil : owner,
                completion: completion,
                details: RunConfiguration.Details(timeout: nil, routingError: .shutDown(action: "\(action)")),
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
        return run.cancellableTransaction()
    }
}
