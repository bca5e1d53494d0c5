import DispatchStore

/// Decides every event against the stock, the only store that knows what is available, and
/// applies the decision (``StockState/outcome(of:)``, ``StockState/apply(_:)``).
final class StockReducer: Reducer<StockState, InventoryAction> {
    override func reduce(_ action: InventoryAction, into state: inout StockState) {
        state.apply(state.outcome(of: action))
    }
}

/// Keeps each order's status; waits for the stock store and asks it about the order.
///
/// The stock decides whether an order is reserved. This store waits for it, so when an order reaches
/// both, the stock's decision is committed here: the order holds a reservation or it does not. The
/// reducer asks the stock's state about this order, never about "the last event", and decides
/// duplicates and cancels from its own state.
final class OrdersReducer: Reducer<OrdersState, InventoryAction> {
    private let stock: Store<StockState, InventoryAction>

    init(stock: Store<StockState, InventoryAction>) {
        self.stock = stock
    }

    override func reduce(_ action: InventoryAction, into state: inout OrdersState) {
        switch action {
        case .restock:
            break
        case .order(let id, _, _):
            if state.statuses[id] != nil {
                state.duplicates += 1
            } else {
                // This store waits for the stock: its decision for this order is committed.
                state.statuses[id] = stock.state.reservations[id] == nil ? .refused : .reserved
            }
        case .cancel(let id):
            // Only a reserved order holds units to give back.
            if state.statuses[id] == .reserved { state.statuses[id] = .cancelled }
        }
    }
}

/// Counts every event by kind, and the units restocked.
///
/// It reads the action alone, so it waits for no store. The events per outcome are derived from the
/// orders' statuses when the summary is made (``OrdersState/outcomeCounts(kinds:)``).
final class AuditReducer: Reducer<AuditState, InventoryAction> {
    override func reduce(_ action: InventoryAction, into state: inout AuditState) {
        state.events += 1
        state.kinds[action.kind, default: 0] += 1
        if case .restock(_, let quantity) = action {
            state.unitsRestocked += quantity
        }
    }
}
