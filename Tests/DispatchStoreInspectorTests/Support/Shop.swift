// A small program for the inspector's tests: a shop's stock, an audit that waits for it, and a store
// whose state is not Encodable.

import DispatchStore
import Foundation

enum ShopAction: ActionType, Codable, Equatable {
    case add(item: String, count: Int)
    case remove(item: String)
    case note(String)
    case fail(String)
}

struct Stock: StateType, Codable, Equatable {
    var items: [String: Int] = [:]
    var names: Set<String> = []
    var notes: [String] = []
    var last: Change?

    struct Change: Codable, Equatable {
        var item: String
        var delta: Int
    }
}

struct Audit: StateType, Codable, Equatable {
    var count = 0
    var kinds: [String: Int] = [:]
}

/// A state that is not `Encodable`: the page shows it through reflection.
struct Tally: StateType {
    var total = 0
    var words: [String] = []
    var kind = Kind.empty

    enum Kind {
        case empty
        case some(count: Int)
    }
}

final class StockReducer: Reducer<Stock, ShopAction> {
    override func operation(
        for action: ShopAction,
        in store: Store<Stock, ShopAction>
    ) -> ActionOperation<Stock, ShopAction>? {
        guard case .fail(let reason) = action else { return nil }
        return ActionOperation(action: action, store: store) { operation, _, _ in
            operation.finish(throwing: ShopError(reason: reason))
        }
    }

    override func reduce(_ action: ShopAction, into state: inout Stock) {
        switch action {
        case .add(let item, let count):
            state.items[item, default: 0] += count
            state.names.insert(item)
            state.last = Stock.Change(item: item, delta: count)
        case .remove(let item):
            state.last = state.items[item].map { Stock.Change(item: item, delta: -$0) }
            state.items[item] = nil
            state.names.remove(item)
        case .note(let text):
            state.notes.append(text)
        case .fail:
            break
        }
    }
}

struct ShopError: Error, CustomStringConvertible {
    let reason: String
    var description: String { "the shop refused: \(reason)" }
}

final class AuditReducer: Reducer<Audit, ShopAction> {
    override func reduce(_ action: ShopAction, into state: inout Audit) {
        state.count += 1
        let kind: String
        switch action {
        case .add: kind = "add"
        case .remove: kind = "remove"
        case .note: kind = "note"
        case .fail: kind = "fail"
        }
        state.kinds[kind, default: 0] += 1
    }
}

final class TallyReducer: Reducer<Tally, ShopAction> {
    override func reduce(_ action: ShopAction, into state: inout Tally) {
        if case .add(let item, let count) = action {
            state.total += count
            state.words.append(item)
            state.kind = .some(count: state.words.count)
        }
    }
}

/// A dispatcher with the three stores.
struct Shop {
    let dispatcher = Dispatcher()
    let stock: Store<Stock, ShopAction>
    let audit = Store<Audit, ShopAction>(identifier: "audit", reducer: AuditReducer(), waitsFor: ["stock"])
    let tally = Store<Tally, ShopAction>(identifier: "tally", reducer: TallyReducer())

    /// The stores, registered; without `tally` (whose state is not `Codable`) for a journal.
    init(withTally: Bool = true, stock initial: Stock = Stock()) throws {
        stock = Store<Stock, ShopAction>(identifier: "stock", reducer: StockReducer(), initialState: initial)
        try dispatcher.register(store: stock)
        try dispatcher.register(store: audit)
        if withTally { try dispatcher.register(store: tally) }
    }

    /// `count` random actions: adds and removes over a few items, and notes.
    static func randomActions(_ count: Int, seed: UInt64) -> [ShopAction] {
        var random = SeededRandom(seed: seed)
        let items = ["apple", "pear", "plum", "fig", "kiwi", "<b>quince</b>"]
        return (0..<count).map { _ in
            let item = items[Int(random.next() % UInt64(items.count))]
            switch random.next() % 10 {
            case 0..<6: return .add(item: item, count: Int(random.next() % 20) + 1)
            case 6..<8: return .remove(item: item)
            default: return .note("note \(random.next() % 1000)")
            }
        }
    }
}

/// SplitMix64: the same numbers on every run.
struct SeededRandom {
    var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
