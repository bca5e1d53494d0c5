import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

@testable import DispatchStoreInspector

@Suite("Pages of logs and journals")
struct FileSourceTests {
    /// Writes a log of `actions` (every store's digest every `every` actions, and at the end).
    private func writeLog(_ actions: [ShopAction], to path: String, every: Int = 5) throws -> [UInt64] {
        let shop = try Shop(withTally: false)
        let log = try ActionLogMiddleware(path: path, appending: false, checksums: .every(every))
        shop.dispatcher.register(middleware: log)
        let ids = actions.map { shop.dispatcher.dispatch($0, mode: .sync).id }
        log.close()
        return ids
    }

    @Test("a replayed log: rows with the log's ids and lines, and the states the program computes")
    func replayedLog() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let actions = Shop.randomActions(60, seed: 4)
        let ids = try writeLog(actions, to: path)

        let shop = try Shop(withTally: false)
        let inspector = Inspector(limit: 1_000)
        let report = try inspector.replay(contentsOf: path, into: shop.dispatcher, actionTypes: [ShopAction.self])
        #expect(report.succeeded && report.replayed == 60)
        let page = try PageReader(inspector.makePage())
        #expect(page.transactionIDs == ids)
        let transactions = page.rows.filter { ($0[0] as! NSNumber).intValue == 0 }
        #expect(page.transactionExtras.map { $0["line"] as? Int } == (1...60).map { $0 })
        let source = try #require(page.data["source"] as? [String: Any])
        #expect(source["kind"] as? String == "log" && source["path"] as? String == path)
        #expect(source["lines"] as? Int == 61)
        #expect(source["bytes"] as? Int == (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int))
        // Every digest in the log was compared, and matched: 12 on records, two on the checkpoint.
        let checks = transactions.flatMap { (($0[9] as? [String: Any])?["checks"] as? [[NSNumber]]) ?? [] }
        #expect(checks.count == 24 && checks.allSatisfy { $0[2].intValue == 1 })
        let checkpoint = try #require(page.rows.last)
        #expect((checkpoint[0] as! NSNumber).intValue == 2 && checkpoint[2] as? String == "checkpoint")
        #expect((checkpoint[6] as? [[NSNumber]])?.map { $0[2].intValue } == [1, 1])
        #expect(try page.rebuiltStates().last?[0]?.isEquivalent(to: pageTree(of: shop.stock.state)) == true)
    }

    @Test(
        "a torn line, a line that is not JSON and an unknown action type are rows and problems, never skipped silently"
    )
    func damagedLog() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        _ = try writeLog(Shop.randomActions(10, seed: 5), to: path, every: 100)
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(
            separator: "\n",
            omittingEmptySubsequences: false
        )
        .map(String.init)
        lines.insert("this is not JSON", at: 3)
        lines.insert(
            #"{"id":999,"time":"2026-11-21T10:15:30.125Z","mode":"sync","stores":["stock"],"seq":[4],"type":"Other.Action","payload":{}}"#,
            at: 6
        )
        try (lines.joined(separator: "\n") + "{\"id\":1000,\"ti").write(toFile: path, atomically: true, encoding: .utf8)

        let shop = try Shop(withTally: false)
        let inspector = Inspector()
        let report = try inspector.replay(contentsOf: path, into: shop.dispatcher, actionTypes: [ShopAction.self])
        #expect(!report.succeeded)
        let page = try PageReader(inspector.makePage())
        let problems = page.rows.filter { ($0[0] as! NSNumber).intValue == 1 }
        #expect(problems.map { $0[2] as? String } == ["unreadable", "unknownType", "torn"])
        #expect(problems.map { $0[5] as? Int } == [4, 7, 14])
        #expect((problems[1][3] as? String)?.contains("Other.Action") == true)
        #expect(page.problems.count >= 3)
        #expect(page.problems.prefix(3).map { $0["row"] as? Int } == [3, 6, 13])
        #expect(inspector.problems.contains { $0.contains("line 14") })
    }

    @Test("a digest that differs from the replayed state names the store and the line")
    func divergence() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        _ = try writeLog([.add(item: "fig", count: 1), .add(item: "fig", count: 2)], to: path, every: 1)
        // Another starting state: the replay computes other states than the log's.
        let shop = try Shop(withTally: false, stock: Stock(items: ["pear": 9]))
        let inspector = Inspector()
        let report = try inspector.replay(contentsOf: path, into: shop.dispatcher, actionTypes: [ShopAction.self])
        #expect(!report.succeeded)
        let page = try PageReader(inspector.makePage())
        let first = try #require(page.rows.first)
        let checks = try #require((first[9] as? [String: Any])?["checks"] as? [[NSNumber]])
        #expect(checks.map { [$0[0].intValue, $0[1].intValue, $0[2].intValue] } == [[0, 1, 0], [1, 1, 1]])
        #expect(inspector.problems.first?.contains("store 'stock' recorded at line 1") == true)
    }

    @Test("a journal's recovery: its snapshot is a row with the states it holds, then each record with its id and line")
    func journal() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let actions = Shop.randomActions(25, seed: 6)
        var ids: [UInt64] = []
        do {
            let shop = try Shop(withTally: false)
            let journal = try Journal(directory: directory.url.path, dispatcher: shop.dispatcher, snapshotEvery: 10)
            ids = actions.map { shop.dispatcher.dispatch($0, mode: .sync).id }
            // No closing snapshot: the next start recovers from snapshot 20 and the 5 records after it.
            _ = journal
        }
        let shop = try Shop(withTally: false)
        let inspector = Inspector()
        shop.dispatcher.register(middleware: inspector)
        let journal = try inspector.recordRecovery {
            try Journal(directory: directory.url.path, dispatcher: shop.dispatcher, snapshotEvery: 10)
        }
        #expect(journal.recovery.replayedRecordCount == 5)
        shop.dispatcher.dispatch(ShopAction.add(item: "after", count: 1), mode: .sync)
        let page = try PageReader(inspector.makePage())
        let kinds = page.rows.map { ($0[0] as! NSNumber).intValue }
        #expect(kinds == [2, 0, 0, 0, 0, 0, 0])
        #expect(page.rows[0][2] as? String == "snapshot")
        #expect(Array(page.transactionIDs.prefix(5)) == Array(ids.suffix(5)))
        #expect(page.transactionExtras.prefix(5).map { $0["line"] as? Int } == [1, 2, 3, 4, 5])
        let source = try #require(page.data["source"] as? [String: Any])
        #expect(source["kind"] as? String == "journal")
        #expect((source["detail"] as? String)?.contains("(20 records) and 5 after it") == true, "\(source)")
        // The snapshot row carries the states it restored; the rows after it, each record's changes.
        let rebuilt = try page.rebuiltStates()
        #expect(rebuilt.last?[0]?.isEquivalent(to: try pageTree(of: shop.stock.state)) == true)
        #expect(
            rebuilt[5][1]?.isEquivalent(
                to: try pageTree(
                    of: {
                        var audit = shop.audit.state
                        audit.count -= 1
                        audit.kinds["add", default: 0] -= 1
                        return audit
                    }()
                )
            ) == true
        )
        try journal.close()
    }
}
