import Foundation

/// The one loop that drives a transaction, whatever holds it (see ``RunHost``): it asks the
/// machine what comes next and carries it out, outside any lock.
///
/// For each step the machine says to start, it announces the step to the middleware, starts the
/// store's operation, and tells the machine how it started; for each step that ended, it delivers
/// the store's changes and reports the step; once every step is reported, it calls the middleware's
/// `didFinish` and the completion, exactly once.
enum RunDriver {
    /// Drives the transaction until it completes, waits for an operation, or its host hands it over.
    ///
    /// - Parameters:
    ///   - host: Where the transaction's machine lives; borrowed (every host method is
    ///     non-mutating), so that a run on the heap is not retained and released around its drive and
    ///     its every read of the action (S4).
    ///   - route: The stores the transaction reaches (`nil`: none), borrowed from the host's
    ///     transaction, which holds it for as long as it is driven.
    ///   - suspendedRuns: Where a run registers if it waits for the first time.
    ///   - context: The calling thread's context.
    ///   - alone: Whether the driver holds the only reference to the host (see
    ///     ``RunHost/lockMachine(startingAlone:)``).
    /// - Returns: Whether the transaction completed or waits for an operation.
    @inline(__always)
    static func drive<Host: RunHost>(
        _ host: Host,
        route: Route?,
        suspendedRuns: SuspendedRuns?,
        context: ThreadContext,
        alone: Bool = false
    ) -> DriveResult {
        let waitsFor = route?.hasDependencies == true ? route?.dependencies : nil
        var locked = host.lockMachine(startingAlone: alone)
        var cancelNow: Operation?
        while true {
            // One call site of `next`, so that it is inlined (S1).
            let next = host.machine.pointee.next(waitsFor: waitsFor)
            let policy = next == .suspend ? host.prepareToWait(suspendedRuns: suspendedRuns) : .none
            host.unlockMachine(locked)
            if let operation = cancelNow {
                operation.cancel()
                cancelNow = nil
            }
            if policy != .none { host.apply(policy) }
            switch next {
            case .start(let index):
                if let begun = start(index, of: route, host: host, context: context) {
                    if let ended = host.didStart(index, begun, context: context) {
                        return ended
                    }
                    locked = host.lockMachine()
                    cancelNow = host.recordStarted(index, begun, context: context)
                } else {
                    locked = host.lockMachine()
                    host.machine.pointee.skipStarting(index)
                }
            case .report(let index, let announce, let deliver):
                report(index, of: route, announce: announce, deliver: deliver, host: host)
                locked = host.lockMachine()
            case .complete:
                host.didComplete()
                // Checked here so that a transaction nobody reads the result of makes no call (S1).
                if host.completion != nil || host.hasMiddleware { complete(route, host: host) }
                return .completed
            case .suspend:
                return .suspended
            }
        }
    }

    /// Announces step `index` and starts its store's operation.
    ///
    /// - Returns: How the operation started, or `nil` when the transaction was stopped meanwhile (a
    ///   middleware's `willDispatch` cancelled it): the step is then skipped.
    @inline(__always)
    private static func start<Host: RunHost>(
        _ index: Int,
        of route: Route?,
        host: Host,
        context: ThreadContext
    ) -> StepStart? {
        let route = borrowedRoute(route)
        var dependencies: [Operation] = []
        if route.hasDependencies {
            let locked = host.lockMachine()
            dependencies = host.dependencies(of: index, in: route)
            host.unlockMachine(locked)
        }
        if host.hasMiddleware {
            let stopped = route.withStore(at: index) { store in
                announce(store, host: host)
                let locked = host.lockMachine()
                let stopped = host.machine.pointee.isStopped
                host.unlockMachine(locked)
                return stopped
            }
            if stopped { return nil }
        }
        return host.withAction { action in
            route.withStore(at: index) { store in
                store.beginStep(action, dependencies: dependencies, context: context) { host.finishHook(for: index) }
            }
        }
    }

    /// The route of a transaction that has a step to start or report (one without a route has none).
    ///
    /// Not `guard let`: binding the route copied it, a retain and a release around every step (S1).
    @inline(__always)
    private static func borrowedRoute(_ route: Route?) -> Route {
        if route == nil { preconditionFailure("DispatchStore: a transaction without a route has a step") }
        return route.unsafelyUnwrapped
    }

    /// Reports step `index`: announces it if it was skipped, delivers the store's changes, tells the
    /// middleware.
    private static func report<Host: RunHost>(
        _ index: Int,
        of route: Route?,
        announce shouldAnnounce: Bool,
        deliver: Bool,
        host: Host
    ) {
        let route = borrowedRoute(route)
        route.withStore(at: index) { store in
            let hasMiddleware = host.hasMiddleware
            if shouldAnnounce && hasMiddleware { announce(store, host: host) }
            if deliver { store.deliverPendingChanges() }
            guard hasMiddleware else { return }
            let transaction = host.cancellableTransaction()
            for middleware in host.middleware {
                middleware.didDispatch(transaction: transaction, action: transaction.action, in: store)
            }
        }
    }

    /// Calls every middleware's `willDispatch` for `store`.
    private static func announce<Host: RunHost>(_ store: any StoreEntry, host: Host) {
        let transaction = host.cancellableTransaction()
        for middleware in host.middleware {
            middleware.willDispatch(transaction: transaction, action: transaction.action, in: store)
        }
    }

    /// Reports the end of the transaction: the middleware's `didFinish`, then the completion.
    private static func complete<Host: RunHost>(_ route: Route?, host: Host) {
        let identifiers = route?.storeIdentifiers ?? []
        let locked = host.lockMachine()
        let machine = host.machine.pointee
        let outcomes = identifiers.indices.map { index in
            StoreOutcome(
                storeIdentifier: identifiers[index],
                status: status(of: index, machine: machine, host: host),
                sequenceNumber: host.withRecords { $0.sequenceNumber(of: index) }
            )
        }
        let givenUp = machine.givenUpSteps
        host.unlockMachine(locked)
        let details = host.details
        var error = details?.routingError
        if let reason = machine.giveUpReason {
            let stores = givenUp.map { identifiers[$0] }
            switch reason {
            case .timeout: error = .timedOut(stores, after: details?.timeout ?? .zero)
            case .shutdown: error = .abandonedByShutdown(stores)
            }
        }
        let result = DispatchResult(transaction: host.resultTransaction, outcomes: outcomes, error: error)
        if let owner = host.owner {
            for middleware in host.middleware {
                middleware.didFinish(result, in: owner)
            }
        }
        host.completion?(result)
    }

    /// How step `index` ended; call with the machine locked.
    private static func status<Host: RunHost>(
        of index: Int,
        machine: TransactionMachine,
        host: Host
    )
        -> StoreOutcome.Status
    {
        switch machine.ending(of: index) {
        case .finished: return .finished
        case .cancelled, .unused: return .cancelled
        case .failed:
            guard let error = host.withRecords({ $0.failure(of: index) }) else {
                TransactionMachine.invalid("lost the error of a failed step", step: index)
            }
            return .failed(error)
        }
    }
}
