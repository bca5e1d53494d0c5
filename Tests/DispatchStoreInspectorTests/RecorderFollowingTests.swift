import DispatchStore
import Foundation
import Testing

@testable import DispatchStoreInspector

@Suite("The inspector and a recorder")
struct RecorderFollowingTests {
    @Test(
        "moves are rows with the states they restored; transactions undone at the end are marked; groups are one entry"
    )
    func moves() throws {
        let shop = try Shop()
        let recorder = RecorderMiddleware(
            limit: 100,
            groupingBy: { transaction in
                if case .note = transaction.action as? ShopAction { return "notes" }
                return nil
            }
        )
        shop.dispatcher.register(middleware: recorder)
        let inspector = Inspector()
        shop.dispatcher.register(middleware: inspector)
        inspector.follow(recorder)

        shop.dispatcher.dispatch(ShopAction.add(item: "fig", count: 1), mode: .sync)  // entry 1
        shop.dispatcher.dispatch(ShopAction.note("a"), mode: .sync)  // entry 2, with the next one
        shop.dispatcher.dispatch(ShopAction.note("b"), mode: .sync)
        shop.dispatcher.dispatch(ShopAction.add(item: "kiwi", count: 2), mode: .sync)  // entry 3
        #expect(recorder.previous())  // to entry 2
        #expect(recorder.previous())  // to entry 1
        #expect(recorder.next())  // to entry 2

        let page = try PageReader(inspector.makePage())
        let kinds = page.rows.map { ($0[0] as! NSNumber).intValue }
        #expect(kinds == [0, 0, 0, 0, 3, 3, 3])
        #expect(
            (page.rows[4][2] as? String)?.hasPrefix("undo: the recorder set every store to history entry 2") == true
        )
        #expect(
            (page.rows[6][2] as? String)?.hasPrefix("redo: the recorder set every store to history entry 2") == true
        )
        let entries = page.rows.prefix(4).map { (($0[9] as? [String: Any])?["entry"] as? Int) }
        #expect(entries == [1, 2, 2, 3])
        let recorded = try #require(page.data["recorder"] as? [String: Any])
        #expect(recorded["current"] as? Int == 2)
        #expect((recorded["entries"] as? [[Any]])?.map { ($0[1] as! NSNumber).intValue } == [0, 1, 2, 1])
        // The rows of the moves carry the states they restored: the rebuilt states follow them.
        let rebuilt = try page.rebuiltStates()
        #expect(
            rebuilt[4][0]?.isEquivalent(
                to: try pageTree(
                    of: Stock(items: ["fig": 1], names: ["fig"], notes: ["a", "b"], last: .init(item: "fig", delta: 1))
                )
            ) == true
        )
        #expect(
            rebuilt[5][0]?.isEquivalent(
                to: try pageTree(of: Stock(items: ["fig": 1], names: ["fig"], last: .init(item: "fig", delta: 1)))
            ) == true
        )
        #expect(rebuilt[6][0]?.isEquivalent(to: try pageTree(of: shop.stock.state)) == true)

        // A new action drops the undone entry: its transaction was undone, then replaced.
        shop.dispatcher.dispatch(ShopAction.remove(item: "fig"), mode: .sync)
        let later = try PageReader(inspector.makePage())
        let entryIDs = (later.data["recorder"] as? [String: Any])?["entries"] as? [[Any]]
        #expect(entryIDs?.map { ($0[0] as! NSNumber).intValue }.contains(3) == false)
        #expect(((later.rows[7][9] as? [String: Any])?["entry"] as? Int) == 4)
    }
}
