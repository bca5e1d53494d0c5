import DispatchStore

/// Derives the stock's decision for each event as the event reaches the stock, from the event and
/// the stock's state before it (``StockState/outcome(of:)``), and keeps the latest for the log.
///
/// Events apply one at a time (the service dispatches them `.serial`, a replica in stream order), so
/// the state read in `willDispatch` is the state the stock's reducer decides from, and the latest
/// decision is the event's until the next one reaches the stock. No store keeps it.
final class StockDecisions: Middleware, Sendable {
    private let stock: Store<StockState, InventoryAction>
    /// The latest event's transaction id and outcome.
    private let latest = Locked<(id: UInt64, outcome: Outcome)?>(nil)

    init(stock: Store<StockState, InventoryAction>) {
        self.stock = stock
    }

    /// The outcome of the event of `transaction`, while it is the latest to reach the stock.
    func outcome(of transaction: Transaction) -> Outcome? {
        latest.withLock { latest in latest?.id == transaction.id ? latest?.outcome : nil }
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        guard store === stock, let event = action as? InventoryAction else { return }
        let outcome = stock.state.outcome(of: event)
        latest.withLock { $0 = (transaction.id, outcome) }
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
}
