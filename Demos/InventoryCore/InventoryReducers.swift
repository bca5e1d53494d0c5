import DispatchStore

/// Decides every event against the stock: the only store that knows what is available.
final class StockReducer: Reducer<StockState, InventoryAction> {
    override func reduce(_ action: InventoryAction, into state: inout StockState) {
        switch action {
        case .restock(let item, let quantity):
            state.available[item, default: 0] += quantity
            state.lastOutcome = .restocked(item: item, quantity: quantity)
        case .order(let id, let item, let quantity):
            let available = state.available[item, default: 0]
            if state.orderIDs.contains(id) {
                state.lastOutcome = .duplicate(id: id)
            } else if available >= quantity {
                state.orderIDs.insert(id)
                state.available[item] = available - quantity
                state.reservations[id] = Reservation(item: item, quantity: quantity)
                state.lastOutcome = .reserved(id: id, item: item, quantity: quantity)
            } else {
                state.orderIDs.insert(id)
                state.lastOutcome = .refused(id: id, item: item, quantity: quantity, available: available)
            }
        case .cancel(let id):
            if let reservation = state.reservations.removeValue(forKey: id) {
                state.available[reservation.item, default: 0] += reservation.quantity
                state.lastOutcome = .cancelled(id: id, item: reservation.item, quantity: reservation.quantity)
            } else {
                let reason = state.orderIDs.contains(id) ? "it holds no reservation" : "no such order"
                state.lastOutcome = .cancelIgnored(id: id, reason: reason)
            }
        }
    }
}

/// Keeps each order's status; waits for the stock store and reads its decision.
final class OrdersReducer: Reducer<OrdersState, InventoryAction> {
    private let stock: Store<StockState, InventoryAction>

    init(stock: Store<StockState, InventoryAction>) {
        self.stock = stock
    }

    override func reduce(_ action: InventoryAction, into state: inout OrdersState) {
        switch stock.state.lastOutcome {
        case .reserved(let id, _, _): state.statuses[id] = .reserved
        case .refused(let id, _, _, _): state.statuses[id] = .refused
        case .cancelled(let id, _, _): state.statuses[id] = .cancelled
        case .duplicate: state.duplicates += 1
        case .restocked, .cancelIgnored, nil: break
        }
    }
}

/// Counts every event and outcome; waits for the orders store (and so for the stock store).
final class AuditReducer: Reducer<AuditState, InventoryAction> {
    private let stock: Store<StockState, InventoryAction>

    init(stock: Store<StockState, InventoryAction>) {
        self.stock = stock
    }

    override func reduce(_ action: InventoryAction, into state: inout AuditState) {
        state.events += 1
        state.kinds[action.kind, default: 0] += 1
        if let outcome = stock.state.lastOutcome {
            state.outcomes[outcome.kind, default: 0] += 1
        }
        if case .restock(_, let quantity) = action {
            state.unitsRestocked += quantity
        }
    }
}
