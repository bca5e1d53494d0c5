import Foundation

/// The one loop that drives every run: it asks the machine what comes next and does it, outside the
/// run's lock (start a step, report one, complete), for every mode.
extension TransactionRun {
    /// How far driving a run got: finished, or suspended until an operation's finish hands it back.
    enum DriveResult {
        case finished
        case suspended
    }

    /// Drives the run until it finishes or suspends for an operation (registered in `suspendedRuns` for
    /// a shutdown); `alone`: the caller holds the only reference (``lockMachine(startingAlone:)``).
    @inline(__always)
    func drive(suspendedRuns: SuspendedRuns?, context: ThreadContext = .current, alone: Bool = false) -> DriveResult {
        if let timeout = body.pointee.configuration.details?.timeout {
            // The deadline counts from the first drive.
            let locked = lockMachine()
            if body.pointee.deadline == 0 {
                body.pointee.deadline = (DispatchTime.now() + timeout.dispatchInterval).uptimeNanoseconds
            }
            unlockMachine(locked)
        }
        // The run holds the route until reused: borrowed as an unmanaged reference, no retain/release (S1).
        let offset = Self.offset(of: \.route)
        let reference = UnsafeRawPointer(body).load(fromByteOffset: offset, as: Unmanaged<Route>?.self)
        guard let route = reference else {
            return drive(route: nil, suspendedRuns: suspendedRuns, context: context, alone: alone)
        }
        return route._withUnsafeGuaranteedRef { route in
            drive(route: route, suspendedRuns: suspendedRuns, context: context, alone: alone)
        }
    }

    /// Drives a `.sync` transaction to the end on the calling thread, waiting for its operations.
    @inline(__always)
    func runOnCaller(suspendedRuns: SuspendedRuns?, context: ThreadContext) {
        while drive(suspendedRuns: suspendedRuns, context: context) == .suspended {
            // Created, under the lock, when the run suspended, so that a resumption signals it.
            lock()
            let signal = body.pointee.callerSignal
            unlock()
            signal?.wait()
        }
    }

    @inline(__always)
    private func drive(route: Route?, suspendedRuns: SuspendedRuns?, context: ThreadContext, alone: Bool) -> DriveResult
    {
        let waitsFor = route?.waitsForTable?.view
        var locked = lockMachine(startingAlone: alone)
        var cancelNow: Operation?
        while true {
            // One call site of `next`, so that it is inlined (S1).
            let next = machine.pointee.next(waitsFor: waitsFor)
            let policy = next == .suspend ? prepareToSuspend(suspendedRuns: suspendedRuns) : .none
            unlockMachine(locked)
            if let operation = cancelNow {
                operation.cancel()
                cancelNow = nil
            }
            if policy != .none { apply(policy) }
            switch next {
            case .start(let index):
                if let begun = start(index, of: route, context: context) {
                    locked = lockMachine()
                    cancelNow = recordStarted(index, begun, context: context)
                } else {
                    locked = lockMachine()
                    machine.pointee.skipStarting(index)
                }
            case .report(let index, let announce, let deliver):
                report(index, of: route, announce: announce, deliver: deliver)
                locked = lockMachine()
            case .finish:
                didFinish()
                // Checked here so that a transaction nobody reads the result of makes no call (S1).
                if body.pointee.configuration.readsResult { reportResult(route) }
                return .finished
            case .suspend: return .suspended
            }
        }
    }

    /// Step `index` started as `begun`: keeps what the result needs (its operation, its error, the sequence
    /// number `beginStep` left in `context`) and tells the machine (call locked); returns the operation
    /// if the transaction was cancelled meanwhile, to cancel after unlocking.
    @inline(__always)
    private func recordStarted(_ index: Int, _ begun: StepStart, context: ThreadContext) -> Operation? {
        if let operation = begun.operation {
            body.pointee.hasRecords = true
            if body.pointee.operations.isEmpty {
                body.pointee.operations = Array(repeating: nil, count: machine.pointee.count)
            }
            body.pointee.operations[index] = operation
        }
        if begun.error != nil || body.pointee.configuration.readsResult {
            record(error: begun.error, sequenceNumber: context.appliedSequenceNumber, of: index)
        }
        let cancelled = machine.pointee.started(index, ending: begun.ending, needsDelivery: begun.needsDelivery)
        return cancelled ? begun.operation : nil
    }

    /// Announces step `index` and starts its store's operation; `nil` when a middleware's `willDispatch`
    /// cancelled the transaction meanwhile, and the step is to be skipped.
    @inline(__always)
    private func start(_ index: Int, of route: Route?, context: ThreadContext) -> StepStart? {
        let route = borrowedRoute(route)
        // `nil` rather than an empty array: no array to release on the common path (S1). Only
        // operations have dependencies: none when no step returned one (S7).
        var dependencies: [Operation]?
        if let waitsFor = route.waitsForTable?.view {
            let locked = lockMachine()
            if !body.pointee.operations.isEmpty {
                dependencies = operations(at: waitsFor.waited(by: index).map { Int($0) })
            }
            unlockMachine(locked)
        }
        if body.pointee.configuration.hasMiddleware {
            announce(route.stores[index])
            let locked = lockMachine()
            let cancelled = machine.pointee.isCancelled
            unlockMachine(locked)
            if cancelled { return nil }
        }
        return withAction { action in
            route.withHandle(at: index) { store in
                store.beginStep(
                    action,
                    prepared: preparedOperation(for: store),
                    dependencies: dependencies,
                    context: context
                ) { finishHook(for: index) }
            }
        }
    }

    /// The operation the reducer of `store` returned before the dispatch took the engine's path, if any.
    @inline(__always)
    private func preparedOperation(for store: StoreHandle) -> Operation? {
        guard let prepared = body.pointee.configuration.details?.prepared, store.reaches(prepared.store) else {
            return nil
        }
        return prepared.operation
    }

    /// The route of a transaction that has a step to start or report; not `guard let`, whose binding
    /// copied the route: a retain and release around every step (S1).
    @inline(__always)
    private func borrowedRoute(_ route: Route?) -> Route {
        if route == nil { preconditionFailure("DispatchStore: a transaction without a route has a step") }
        return route.unsafelyUnwrapped
    }

    /// Reports step `index`: announces it if skipped, delivers its store's changes, tells the middleware.
    private func report(_ index: Int, of route: Route?, announce shouldAnnounce: Bool, deliver: Bool) {
        let route = borrowedRoute(route)
        let hasMiddleware = body.pointee.configuration.hasMiddleware
        if shouldAnnounce && hasMiddleware { announce(route.stores[index]) }
        if deliver { route.withHandle(at: index) { $0.deliverPendingChanges(context: .current) } }
        guard hasMiddleware else { return }
        let transaction = cancellableTransaction()
        let store = route.stores[index]
        for middleware in body.pointee.configuration.middleware ?? [] {
            middleware.didDispatch(transaction: transaction, action: transaction.action, in: store)
        }
    }

    /// Calls every middleware's `willDispatch` for `store`.
    private func announce(_ store: any StoreEntry) {
        let transaction = cancellableTransaction()
        for middleware in body.pointee.configuration.middleware ?? [] {
            middleware.willDispatch(transaction: transaction, action: transaction.action, in: store)
        }
    }

    /// Reports the end of the transaction: the middleware's `didFinish`, then the completion.
    private func reportResult(_ route: Route?) {
        let identifiers = route?.storeIdentifiers ?? []
        let locked = lockMachine()
        let machine = machine.pointee
        let outcomes = identifiers.indices.map { index in
            StoreOutcome(
                storeIdentifier: identifiers[index],
                status: StoreOutcome.Status(machine.ending(of: index), error: body.pointee.failures?[index]),
                sequenceNumber: sequenceNumber(of: index)
            )
        }
        let abandoned = machine.abandonedSteps
        unlockMachine(locked)
        let configuration = body.pointee.configuration
        var error = configuration.details?.routingError
        if let reason = machine.abandonReason {
            let stores = abandoned.map { identifiers[$0] }
            switch reason {
            case .timeout: error = .timedOut(stores, after: configuration.details?.timeout ?? .zero)
            case .shutdown: error = .abandonedByShutdown(stores)
            }
        }
        let transaction = body.pointee.transaction
        let result = DispatchResult(
            transaction: Transaction(
                id: transaction.id,
                action: transaction.action,
                mode: transaction.mode,
                targetIdentifier: transaction.targetIdentifier,
                links: Transaction.Links(route: route)
            ),
            outcomes: outcomes,
            error: error
        )
        if let owner = configuration.owner {
            for middleware in configuration.middleware ?? [] { middleware.didFinish(result, in: owner) }
        }
        configuration.completion?(result)
    }
}
