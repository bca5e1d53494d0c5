import DispatchStore
import Foundation
import InventoryCore
import TestSupport
import Testing

@Suite("Inventory events")
struct EventTests {
    @Test("the three events parse, in any key order and spacing")
    func validEvents() throws {
        #expect(
            try Event.parse(#"{"event":"restock","item":"apple","quantity":10}"#)
                == .restock(item: "apple", quantity: 10)
        )
        #expect(
            try Event.parse(#" { "quantity": 3, "item": "pear", "id": "o-1", "event": "order" } "#)
                == .order(id: "o-1", item: "pear", quantity: 3)
        )
        #expect(try Event.parse(#"{"event":"cancel","id":"o-1"}"#) == .cancel(id: "o-1"))
    }

    @Test(
        "a bad line says what is wrong",
        arguments: [
            ("garbage", "not valid JSON"),
            ("[1, 2]", "not a JSON object"),
            (#"{"item":"apple"}"#, #"missing "event""#),
            (#"{"event":"refund","id":"o-1"}"#, #"unknown event "refund" (expected restock, order or cancel)"#),
            (#"{"event":"restock","item":"apple"}"#, #"restock needs a "quantity""#),
            (#"{"event":"restock","item":" ","quantity":1}"#, #"restock needs a non-empty "item""#),
            (#"{"event":"order","item":"apple","quantity":1}"#, #"order needs a non-empty "id""#),
            (#"{"event":"restock","item":"apple","quantity":2.5}"#, #""quantity" must be a whole number, not 2.5"#),
            (#"{"event":"restock","item":"apple","quantity":"2"}"#, #""quantity" must be a whole number"#),
            (
                #"{"event":"restock","item":"apple","quantity":0}"#,
                #""quantity" must be between 1 and 1000000000, not 0"#
            ),
            (#"{"event":"restock","item":7,"quantity":1}"#, #""item" must be a string"#),
        ]
    )
    func badLines(line: String, problem: String) {
        #expect(throws: Event.Problem(problem)) { try Event.parse(line) }
    }
}

@Suite("The inventory service, in process")
struct InventoryServiceTests {
    @Test("orders wait for the stock's decision; cancels give reserved units back; the audit counts all")
    func rules() async throws {
        let messages = Shared<[String]>([])
        let service = try InventoryService { messages.append($0) }
        let lines = [
            #"{"event":"restock","item":"apple","quantity":10}"#,
            #"{"event":"order","id":"o-1","item":"apple","quantity":3}"#,
            #"{"event":"order","id":"o-2","item":"apple","quantity":30}"#,
            "not json",
            #"{"event":"order","id":"o-1","item":"apple","quantity":1}"#,
            #"{"event":"order","id":"o-3","item":"apple","quantity":2}"#,
            #"{"event":"cancel","id":"o-1"}"#,
            #"{"event":"cancel","id":"o-2"}"#,
            "",
        ]
        for (index, line) in lines.enumerated() {
            service.accept(line: line, number: index + 1)
        }
        let summary = await service.finish(reason: "end of input")

        #expect(summary.lines == Summary.Lines(read: 9, accepted: 7, bad: 1))
        #expect(summary.stock == ["apple": 8])
        #expect(summary.reserved == ["apple": 2])
        #expect(summary.orders == Summary.Orders(reserved: 1, refused: 1, cancelled: 1, duplicates: 1))
        #expect(summary.audit.events == 7)
        #expect(summary.audit.kinds == ["restock": 1, "order": 4, "cancel": 2])
        #expect(
            summary.audit.outcomes == [
                "restocked": 1, "reserved": 2, "refused": 1, "duplicate": 1, "cancelled": 1, "cancel_ignored": 1,
            ]
        )
        // Some transactions may have ended before the shutdown began; it waited for the rest.
        let shutdown = try #require(summary.shutdown)
        #expect((0...7).contains(shutdown.completed))
        #expect(shutdown.cancelled == 0 && shutdown.rejected == 0 && shutdown.idle)
        #expect(messages.current.contains("inventory: line 4: not valid JSON; skipped"))
        #expect(messages.current.contains { $0.contains("refused order o-2: 30 x apple wanted, 7 in stock") })
        #expect(messages.current.contains { $0.contains("ignored cancel of order o-2: it holds no reservation") })
    }

    @Test("after finish no line is accepted, and the summary counts exactly what was")
    func nothingAfterFinish() async throws {
        let service = try InventoryService(verbosity: .quiet) { _ in }
        let events = GeneratedEvent.generate(2_000, seed: 7)
        for (index, event) in events.enumerated() {
            #expect(service.accept(line: event.line, number: index + 1))
        }
        let summary = await service.finish(reason: "test")

        #expect(!service.accept(line: events[0].line, number: 2_001))
        #expect(summary.lines.accepted == 2_000)
        #expect(ReferenceInventory(events).matches(summary))
        #expect(service.summary(reason: "again").audit.events == 2_000)
    }

    @Test("with a log, a fresh service replaying it ends in the same states")
    func logAndReplay() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let service = try InventoryService(logPath: path, verbosity: .quiet) { _ in }
        let events = GeneratedEvent.generate(3_000, seed: 11)
        for (index, event) in events.enumerated() {
            service.accept(line: event.line, number: index + 1)
        }
        let original = await service.finish(reason: "end of input")
        #expect(original.log == Summary.Log(path: path, written: 3_000, failures: 0))

        let (replayed, report) = try InventoryService(verbosity: .quiet) { _ in }.replay(contentsOf: path)

        #expect(report.replayed == 3_000)
        #expect(report.mismatchedLines.isEmpty)
        #expect(ReferenceInventory(events).matches(replayed))
        #expect(
            replayed.stock == original.stock && replayed.orders == original.orders && replayed.audit == original.audit
        )
    }
}
