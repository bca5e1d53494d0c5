import DispatchStore
import Foundation
import TestSupport
import Testing

@testable import DispatchStoreInspector

@Suite("The live inspector")
struct InspectorRecordingTests {
    @Test(
        "each transaction: id, mode, action, the stores in the order they applied it with their numbers, outcome, duration"
    )
    func transactionRow() throws {
        let shop = try Shop()
        let inspector = Inspector()
        shop.dispatcher.register(middleware: inspector)
        let transaction = shop.dispatcher.dispatch(ShopAction.add(item: "fig", count: 3), mode: .sync)
        shop.dispatcher.dispatch(ShopAction.add(item: "kiwi", count: 1), to: "tally", mode: .sync)

        let page = try PageReader(inspector.makePage())
        #expect(page.storeIdentifiers == ["stock", "audit", "tally"])
        let row = page.rows[0]
        #expect((row[1] as? NSNumber)?.uint64Value == transaction.id)
        #expect((row[4] as? NSNumber)?.intValue == 1)  // sync
        #expect(page.types[(row[5] as! NSNumber).intValue] == "DispatchStoreInspectorTests.ShopAction")
        #expect(try page.tree(row[6]).isEquivalent(to: pageTree(of: ShopAction.add(item: "fig", count: 3))))
        // stock, then audit (it waits for stock), then tally; each its first action; all finished.
        let steps = (row[7] as! [NSNumber]).map(\.intValue)
        #expect(Set([steps[0], steps[3], steps[6]]) == [0, 1, 2])
        #expect(steps.firstIndex(of: 0)! < steps.firstIndex(of: 1)!)
        #expect([steps[1], steps[4], steps[7]] == [1, 1, 1] && [steps[2], steps[5], steps[8]] == [0, 0, 0])
        #expect((row[3] as! NSNumber).intValue >= 0)
        // The second one went to tally alone: its second action, and the target is named.
        let second = page.rows[1]
        #expect((second[7] as! [NSNumber]).map(\.intValue) == [2, 2, 0])
        #expect((second[9] as? [String: Any])?["target"] as? String == "tally")
        #expect(inspector.transactionCount == 2)
    }

    @Test("a failed operation, the store cancelled after it, and an action nobody handles, with their errors")
    func outcomes() throws {
        let shop = try Shop()
        let inspector = Inspector()
        shop.dispatcher.register(middleware: inspector)
        shop.dispatcher.dispatch(ShopAction.fail("closed on Sundays"), mode: .sync)
        shop.dispatcher.dispatch(UnhandledAction(), mode: .sync)

        let page = try PageReader(inspector.makePage())
        let failed = page.rows[0]
        let steps = (failed[7] as! [NSNumber]).map(\.intValue)
        var status: [String: Int] = [:]
        for index in stride(from: 0, to: steps.count, by: 3) {
            status[page.storeIdentifiers[steps[index]]] = steps[index + 2]
        }
        #expect(status == ["stock": 2, "audit": 1, "tally": 0])
        let failures = (failed[9] as? [String: Any])?["failures"] as? [String: String]
        #expect(failures?["0"] == "the shop refused: closed on Sundays")
        let unhandled = page.rows[1]
        #expect((unhandled[7] as! [Any]).isEmpty)
        #expect(
            ((unhandled[9] as? [String: Any])?["error"] as? String)?.contains("No registered store handles") == true
        )
    }

    @Test("the page rebuilds every store's state after every transaction of random runs exactly")
    func exactStates() throws {
        for seed: UInt64 in [1, 2, 3] {
            let shop = try Shop()
            let inspector = Inspector()
            shop.dispatcher.register(middleware: inspector)
            var expected: [[InspectedValue]] = []
            for action in Shop.randomActions(300, seed: seed) {
                shop.dispatcher.dispatch(action, mode: .sync)
                expected.append([
                    try pageTree(of: shop.stock.state), try pageTree(of: shop.audit.state),
                    try PageReader.Keyless(keys: []).tree(reflectedJSON(shop.tally.state)),
                ])
            }
            let page = try PageReader(inspector.makePage())
            let rebuilt = try page.rebuiltStates()
            #expect(rebuilt.count == expected.count)
            for (row, states) in expected.enumerated() {
                for (store, state) in states.enumerated() {
                    #expect(
                        rebuilt[row][store]?.isEquivalent(to: state) == true,
                        "seed \(seed), row \(row), store \(store)"
                    )
                }
            }
        }
    }

    @Test("memory is bounded: the newest transactions are kept, the page says how many were dropped, states stay exact")
    func bounded() throws {
        let shop = try Shop()
        let inspector = Inspector(limit: 40)
        shop.dispatcher.register(middleware: inspector)
        var expected: [InspectedValue] = []
        var random = SeededRandom(seed: 9)
        for index in 0..<600 {
            // Long notes: the stock's keyframes come every few transactions, and old ones are let go.
            let action: ShopAction =
                index % 3 == 0
                ? .note(String(repeating: "n", count: Int(random.next() % 2_000))) : .add(item: "fig", count: index)
            shop.dispatcher.dispatch(action, mode: .sync)
            expected.append(try pageTree(of: shop.stock.state))
        }
        #expect(inspector.transactionCount == 40)
        #expect(inspector.droppedTransactionCount == 560)
        let state = inspector.withSettledState { state in
            state.encodeAll()
            return state
        }
        #expect(state.keptRows.count == 40)
        #expect(state.stores[0].keyframes.count < 20)
        let page = try PageReader(inspector.makePage())
        #expect((page.data["dropped"] as? Int) == 560 && (page.data["kept"] as? Int) == 40)
        let rebuilt = try page.rebuiltStates()
        for (index, states) in rebuilt.enumerated() {
            #expect(states[0]?.isEquivalent(to: expected[560 + index]) == true, "row \(index)")
        }
    }

    @Test(
        "a long run holds a bounded number of states: those of dropped transactions are let go",
        arguments: [false, true]
    )
    func longRunLetsGo(followingRecorder: Bool) throws {
        let shop = try Shop()
        // With a recorder followed, rows are made as transactions end; without, when the rows are read.
        let recorder = followingRecorder ? RecorderMiddleware(limit: 10) : nil
        if let recorder { shop.dispatcher.register(middleware: recorder) }
        let inspector = Inspector(limit: 40)
        shop.dispatcher.register(middleware: inspector)
        if let recorder { inspector.follow(recorder) }
        for index in 0..<5_000 {
            shop.dispatcher.dispatch(ShopAction.add(item: "fig", count: index), mode: .sync)
        }
        let (ended, held) = inspector.state.withLockedValue { state in
            (state.ended.count, state.stores.map(\.heldStateCount))
        }
        #expect(inspector.transactionCount == 40 && inspector.droppedTransactionCount == 4_960)
        // Kept: 40 transactions, and at most as many again (or 1,024) let go but not compacted yet.
        #expect(ended <= 1_100)
        #expect(held.allSatisfy { $0 <= 1_100 }, "\(held)")
        let page = try PageReader(inspector.makePage())
        let rebuilt = try page.rebuiltStates()
        #expect(rebuilt.count == 40)
        #expect(rebuilt.last?[0]?.isEquivalent(to: try pageTree(of: shop.stock.state)) == true)
        withExtendedLifetime(recorder) {}
    }

    @Test("an action equal to an earlier one is written as its text; every row shows its own action")
    func repeatedActions() throws {
        let shop = try Shop()
        let inspector = Inspector()
        shop.dispatcher.register(middleware: inspector)
        // Short strings are held in the value, longer ones in storage of their own; equal
        // actions made apart, equal actions sharing storage, and actions differing in one value.
        let long = String(repeating: "a long note, stored apart ", count: 3)
        let actions: [ShopAction] = [
            .add(item: "fig", count: 3), .add(item: "fig", count: 3), .add(item: "fig", count: 4),
            .add(item: "kiwi", count: 3), .note(long), .note(long), .note(long + "!"), .remove(item: "fig"),
            .note(String(repeating: "a long note, stored apart ", count: 3)), .add(item: "fig", count: 3),
        ]
        for action in actions {
            shop.dispatcher.dispatch(action, mode: .sync)
        }
        let page = try PageReader(inspector.makePage())
        #expect(page.rows.count == actions.count)
        for (row, action) in zip(page.rows, actions) {
            #expect(try page.tree(row[6]).isEquivalent(to: pageTree(of: action)), "\(action)")
        }
    }

    @Test("a state read after the store applied later actions is marked, never shown as exact")
    func lateRead() {
        var state = InspectorState(limit: 10)
        state.stores.append(StoreTrack(identifier: "stock", typeName: "Stock", waitsFor: []))
        state.storeIndex["stock"] = 0
        state.stores[0].start(with: Stock(), sequenceNumber: 0, at: 0)
        let late = state.changes(for: [(0, Stock(items: ["fig": 2]), 2)], row: 0, expected: [(0, 1)])
        #expect(late[0].note?.contains("after the store applied action #2, not #1") == true)
        let backwards = state.changes(for: [(0, Stock(items: ["fig": 1]), 1)], row: 1, expected: [(0, 1)])
        #expect(backwards[0].note?.contains("a later state of the store (after action #2) was shown before") == true)
    }

    @Test("async and serial transactions from several threads: every one is a row, with its own numbers")
    func concurrent() async throws {
        let shop = try Shop()
        let inspector = Inspector()
        shop.dispatcher.register(middleware: inspector)
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for index in 0..<50 {
                        shop.dispatcher.dispatch(
                            ShopAction.add(item: "item \(thread)", count: index),
                            mode: index % 2 == 0 ? .async : .serial
                        )
                    }
                }
            }
        }
        #expect(await shop.dispatcher.waitForIdle(timeout: .seconds(120)))
        // Nothing runs beside this one: its row holds the final states.
        shop.dispatcher.dispatch(ShopAction.note("last"), mode: .sync)
        #expect(inspector.transactionCount == 201)
        let page = try PageReader(inspector.makePage())
        var numbers: [Int: Set<Int>] = [:]
        for row in page.rows {
            let steps = (row[7] as! [NSNumber]).map(\.intValue)
            for index in stride(from: 0, to: steps.count, by: 3) {
                numbers[steps[index], default: []].insert(steps[index + 1])
            }
        }
        // Each store numbered every action once, whatever order the rows are in.
        #expect(numbers.keys.sorted() == [0, 1, 2])
        #expect(numbers.values.allSatisfy { $0 == Set(1...201) })
        let rebuilt = try page.rebuiltStates()
        #expect(rebuilt.last?[0]?.isEquivalent(to: try pageTree(of: shop.stock.state)) == true)
        #expect(rebuilt.last?[1]?.isEquivalent(to: try pageTree(of: shop.audit.state)) == true)
    }

    /// What reflection makes of a state, written as the page writes it.
    private func reflectedJSON(_ value: Any) throws -> Any {
        var writer = PageJSON(usesKeyTable: false)
        writer.write(Reflection.tree(of: value))
        return try JSONSerialization.jsonObject(with: Data(writer.bytes), options: [.fragmentsAllowed])
    }
}
