/// What a transaction run executes: the transaction, who hears of it, and how it may end.
///
/// Built by the engine for each dispatch and given to a run, new or reused; immutable while the run
/// is driven.
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

    var id: UInt64
    var action: any ActionType
    var mode: DispatchMode
    /// The stores the transaction reaches, or `nil` when it reaches none.
    var route: Route?
    var middleware: [any Middleware]
    /// The dispatcher, for the middleware's `didFinish`; `nil` when there is no middleware.
    var owner: Dispatcher?
    var completion: (@Sendable (DispatchResult) -> Void)?
    /// The identifier passed as `to:`, if any.
    var targetIdentifier: String?
    /// Whether the run starts cancelled (the dispatch of an already cancelled task): every store is
    /// then skipped and reported as cancelled.
    var startsCancelled: Bool
    var details: Details?
}
