public import DispatchStore

/// One event of the inventory service: what arrives on standard input, and what the action log keeps.
public enum InventoryAction: ActionType, Codable, Equatable {
    /// Adds `quantity` units of `item` to the stock.
    case restock(item: String, quantity: Int)
    /// Orders `quantity` units of `item`: reserved when the stock has them, refused otherwise.
    case order(id: String, item: String, quantity: Int)
    /// Cancels the order `id`, giving its reserved units back to the stock.
    case cancel(id: String)

    /// The event's name in the input: `restock`, `order` or `cancel`.
    public var kind: String {
        switch self {
        case .restock: "restock"
        case .order: "order"
        case .cancel: "cancel"
        }
    }
}

/// What the stock decides for one event.
///
/// Derived from the event and the stock's state before it (``StockState/outcome(of:)``), which the
/// stock's reducer then applies; the service's log derives it the same way. No store keeps it.
public enum Outcome: Sendable, Equatable {
    case restocked(item: String, quantity: Int)
    case reserved(id: String, item: String, quantity: Int)
    case refused(id: String, item: String, quantity: Int, available: Int)
    case duplicate(id: String)
    case cancelled(id: String, item: String, quantity: Int)
    case cancelIgnored(id: String, reason: String)

    /// The outcome's name in the summary.
    public var kind: String {
        switch self {
        case .restocked: "restocked"
        case .reserved: "reserved"
        case .refused: "refused"
        case .duplicate: "duplicate"
        case .cancelled: "cancelled"
        case .cancelIgnored: "cancel_ignored"
        }
    }

    /// Whether an operator should hear of it at the default log level.
    public var isNotable: Bool {
        switch self {
        case .restocked, .reserved, .cancelled: false
        case .refused, .duplicate, .cancelIgnored: true
        }
    }

    /// A phrase for the log, such as `reserved 3 x apple for order o-1`.
    public var text: String {
        switch self {
        case .restocked(let item, let quantity): "restocked \(quantity) x \(item)"
        case .reserved(let id, let item, let quantity): "reserved \(quantity) x \(item) for order \(id)"
        case .refused(let id, let item, let quantity, let available):
            "refused order \(id): \(quantity) x \(item) wanted, \(available) in stock"
        case .duplicate(let id): "ignored order \(id): an order with this id was already placed"
        case .cancelled(let id, let item, let quantity): "cancelled order \(id): \(quantity) x \(item) back in stock"
        case .cancelIgnored(let id, let reason): "ignored cancel of order \(id): \(reason)"
        }
    }
}

/// Units held for one order.
public struct Reservation: Sendable, Equatable, Codable {
    /// The item reserved.
    public var item: String
    /// How many units.
    public var quantity: Int
}

/// The stock store's state: units available per item and the reservations of open orders.
///
/// The states are `Codable` so that `--data` can keep them in a journal's snapshots.
public struct StockState: StateType, Codable {
    /// Units in stock and not reserved, per item.
    public var available: [String: Int] = [:]
    /// The open orders' reservations, by order id.
    public var reservations: [String: Reservation] = [:]
    /// Every order id seen, open or not.
    public var orderIDs: Set<String> = []

    /// An empty stock.
    public init() {}

    /// Units reserved by open orders, per item.
    public var reserved: [String: Int] {
        reservations.values.reduce(into: [:]) { totals, reservation in
            totals[reservation.item, default: 0] += reservation.quantity
        }
    }

    /// What `action` does to this stock, the stock before the event.
    ///
    /// - Parameter action: The event about to be applied.
    /// - Returns: Its outcome; ``apply(_:)`` makes the change it stands for.
    public func outcome(of action: InventoryAction) -> Outcome {
        switch action {
        case .restock(let item, let quantity):
            return .restocked(item: item, quantity: quantity)
        case .order(let id, let item, let quantity):
            let available = available[item, default: 0]
            if orderIDs.contains(id) { return .duplicate(id: id) }
            if available >= quantity { return .reserved(id: id, item: item, quantity: quantity) }
            return .refused(id: id, item: item, quantity: quantity, available: available)
        case .cancel(let id):
            if let reservation = reservations[id] {
                return .cancelled(id: id, item: reservation.item, quantity: reservation.quantity)
            }
            return .cancelIgnored(id: id, reason: orderIDs.contains(id) ? "it holds no reservation" : "no such order")
        }
    }

    /// Makes the change `outcome` stands for (an outcome ``outcome(of:)`` gave for this stock).
    ///
    /// - Parameter outcome: The outcome of the event being applied.
    public mutating func apply(_ outcome: Outcome) {
        switch outcome {
        case .restocked(let item, let quantity):
            available[item, default: 0] += quantity
        case .reserved(let id, let item, let quantity):
            orderIDs.insert(id)
            available[item, default: 0] -= quantity
            reservations[id] = Reservation(item: item, quantity: quantity)
        case .refused(let id, _, _, _):
            orderIDs.insert(id)
        case .cancelled(let id, let item, let quantity):
            reservations[id] = nil
            available[item, default: 0] += quantity
        case .duplicate, .cancelIgnored:
            break
        }
    }
}

/// The status of one order.
public enum OrderStatus: String, Sendable, Equatable, Codable {
    case reserved
    case refused
    case cancelled
}

/// The orders store's state: every order and its status.
public struct OrdersState: StateType, Codable {
    /// Each order's status, by order id.
    public var statuses: [String: OrderStatus] = [:]
    /// Orders ignored because their id was taken.
    public var duplicates = 0

    /// No orders.
    public init() {}

    /// How many orders have each status.
    public var counts: [OrderStatus: Int] {
        statuses.values.reduce(into: [:]) { counts, status in counts[status, default: 0] += 1 }
    }

    /// How many events had each outcome (`reserved`, `refused`, ...; see ``Outcome/kind``), derived
    /// from the statuses rather than counted by another store: every reserved order was reserved once
    /// (cancelled ones too), every cancelled order by one cancel, and the other cancels were ignored.
    ///
    /// - Parameter kinds: How many events of each kind there were (``AuditState/kinds``).
    /// - Returns: The count of each outcome that happened at least once.
    public func outcomeCounts(kinds: [String: Int]) -> [String: Int] {
        let counts = counts
        let cancelled = counts[.cancelled, default: 0]
        let outcomes = [
            "restocked": kinds["restock", default: 0],
            "reserved": counts[.reserved, default: 0] + cancelled,
            "refused": counts[.refused, default: 0],
            "duplicate": duplicates,
            "cancelled": cancelled,
            "cancel_ignored": kinds["cancel", default: 0] - cancelled,
        ]
        return outcomes.filter { $0.value > 0 }
    }
}

/// The audit store's state: a count of every event, by kind.
public struct AuditState: StateType, Codable {
    /// Events handled.
    public var events = 0
    /// Events per kind (`restock`, `order`, `cancel`).
    public var kinds: [String: Int] = [:]
    /// Units added by restocks.
    public var unitsRestocked = 0

    /// Nothing counted yet.
    public init() {}
}
