import Foundation
import InventoryCore
import TestSupport

/// One generated input event: its line and what it means.
struct GeneratedEvent {
    enum Kind {
        case restock(item: String, quantity: Int)
        case order(id: String, item: String, quantity: Int)
        case cancel(id: String)
    }

    let kind: Kind

    var line: String {
        switch kind {
        case .restock(let item, let quantity):
            #"{"event": "restock", "item": "\#(item)", "quantity": \#(quantity)}"#
        case .order(let id, let item, let quantity):
            #"{"event":"order","id":"\#(id)","item":"\#(item)","quantity":\#(quantity)}"#
        case .cancel(let id):
            #"{"id": "\#(id)", "event": "cancel"}"#
        }
    }

    var action: InventoryAction {
        switch kind {
        case .restock(let item, let quantity): .restock(item: item, quantity: quantity)
        case .order(let id, let item, let quantity): .order(id: id, item: item, quantity: quantity)
        case .cancel(let id): .cancel(id: id)
        }
    }

    /// `count` events over a few items: restocks, orders (some reusing an id) and cancels (some of
    /// unknown or refused orders).
    static func generate(_ count: Int, seed: UInt64 = 42) -> [GeneratedEvent] {
        var random = SeededGenerator(seed: seed)
        let items = ["apple", "pear", "plum", "fig", "kiwi", "quince"]
        var events: [GeneratedEvent] = []
        events.reserveCapacity(count)
        for index in 0..<count {
            let roll = Int.random(in: 0..<100, using: &random)
            let item = items[Int.random(in: 0..<items.count, using: &random)]
            switch roll {
            case 0..<30:
                events.append(
                    GeneratedEvent(kind: .restock(item: item, quantity: Int.random(in: 1...25, using: &random)))
                )
            case 30..<85:
                let id = "o-\(Int.random(in: 0...(index / 2 + 10), using: &random))"
                let quantity = Int.random(in: 1...12, using: &random)
                events.append(GeneratedEvent(kind: .order(id: id, item: item, quantity: quantity)))
            default:
                events.append(
                    GeneratedEvent(kind: .cancel(id: "o-\(Int.random(in: 0...(index / 2 + 10), using: &random))"))
                )
            }
        }
        return events
    }
}

/// The inventory's rules, written again for the tests: the expected summary of a list of events.
struct ReferenceInventory {
    var available: [String: Int] = [:]
    var reservations: [String: (item: String, quantity: Int)] = [:]
    var orderIDs: Set<String> = []
    var statuses: [String: String] = [:]
    var duplicates = 0
    var events = 0
    var kinds: [String: Int] = [:]
    var outcomes: [String: Int] = [:]
    var unitsRestocked = 0

    init(_ events: some Sequence<GeneratedEvent>) {
        for event in events {
            apply(event)
        }
    }

    mutating func apply(_ event: GeneratedEvent) {
        events += 1
        let outcome: String
        switch event.kind {
        case .restock(let item, let quantity):
            kinds["restock", default: 0] += 1
            available[item, default: 0] += quantity
            unitsRestocked += quantity
            outcome = "restocked"
        case .order(let id, let item, let quantity):
            kinds["order", default: 0] += 1
            if orderIDs.contains(id) {
                duplicates += 1
                outcome = "duplicate"
            } else {
                orderIDs.insert(id)
                if available[item, default: 0] >= quantity {
                    available[item, default: 0] -= quantity
                    reservations[id] = (item, quantity)
                    statuses[id] = "reserved"
                    outcome = "reserved"
                } else {
                    statuses[id] = "refused"
                    outcome = "refused"
                }
            }
        case .cancel(let id):
            kinds["cancel", default: 0] += 1
            if let reservation = reservations.removeValue(forKey: id) {
                available[reservation.item, default: 0] += reservation.quantity
                statuses[id] = "cancelled"
                outcome = "cancelled"
            } else {
                outcome = "cancel_ignored"
            }
        }
        outcomes[outcome, default: 0] += 1
    }

    /// The parts of a summary that the events decide.
    func matches(_ summary: Summary) -> Bool {
        let reserved = reservations.values.reduce(into: [String: Int]()) { $0[$1.item, default: 0] += $1.quantity }
        let count = { (status: String) in statuses.values.filter { $0 == status }.count }
        return summary.stock == available
            && summary.reserved == reserved
            && summary.orders.reserved == count("reserved")
            && summary.orders.refused == count("refused")
            && summary.orders.cancelled == count("cancelled")
            && summary.orders.duplicates == duplicates
            && summary.audit.events == events
            && summary.audit.kinds == kinds
            && summary.audit.outcomes == outcomes
            && summary.audit.unitsRestocked == unitsRestocked
    }
}
