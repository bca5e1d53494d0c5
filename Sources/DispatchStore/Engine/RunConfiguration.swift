/// How a transaction is run: who hears of it, and how it may end.
///
/// Built by the engine for each dispatch, next to the ``Transaction`` itself; immutable while the
/// transaction is driven.
struct RunConfiguration {
    /// What few dispatches have: a deadline, or a problem found before any store was reached.
    final class Details: Sendable {
        /// How long the operations may run once started.
        let timeout: Duration?
        /// Why no store is reached (unhandled action, unknown or mismatched `to:`, shut down).
        let routingError: DispatchError?

        init(timeout: Duration?, routingError: DispatchError?) {
            self.timeout = timeout
            self.routingError = routingError
        }
    }

    var middleware: [any Middleware]
    /// The dispatcher, for the middleware's `didFinish`; `nil` when there is no middleware.
    var owner: Dispatcher?
    var completion: (@Sendable (DispatchResult) -> Void)?
    var details: Details?
    /// Whether the run starts cancelled (the dispatch of an already cancelled task): every store is
    /// then skipped and reported as cancelled.
    var startsCancelled: Bool
    /// For a run without a lane: whether its `.sync` caller blocks until it completes (`dispatch`),
    /// or lets it go on, on the thread that finishes its operation (`perform` from a task).
    var blocksCaller = true
    /// The action's value in the blocked `.sync` caller's frame, valid while the run is driven:
    /// the stores read it from there instead of opening the transaction's existential (S1).
    var actionPointer: UnsafeRawPointer?

    /// What a reused run holds between two transactions: refers to nothing, so that the next
    /// configuration is written over it without destroying it first.
    static var idle: RunConfiguration {
        RunConfiguration(middleware: [], owner: nil, completion: nil, details: nil, startsCancelled: false)
    }

    /// Makes the configuration ``idle``, releasing only what it holds: most hold no middleware,
    /// owner, completion or details, and their release calls would cost more than the checks (S4).
    mutating func clear() {
        // The shared empty storage has no capacity; an emptied array may still own a buffer.
        if middleware.capacity != 0 { middleware = [] }
        if owner != nil { owner = nil }
        if completion != nil { completion = nil }
        if details != nil { details = nil }
        startsCancelled = false
        blocksCaller = true
        actionPointer = nil
    }

    /// Whether other threads may reach the run as soon as it starts: middleware receive its
    /// transaction, and a non-blocking caller's task may cancel it.
    var isSharedFromStart: Bool {
        !middleware.isEmpty || !blocksCaller
    }
}
