import DispatchStore
import DispatchStoreJournal
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
            (
                #"{"event":"restock","item":"apple","quantity":9223372036854775807}"#,
                #""quantity" must be between 1 and 1000000000, not 9223372036854775807"#
            ),
            (
                #"{"event":"restock","item":"apple","quantity":1e30}"#,
                #""quantity" must be between 1 and 1000000000, not a number of 31 digits"#
            ),
            (
                #"{"event":"order","id":"o-1","item":"apple","quantity":-2}"#,
                #""quantity" must be between 1 and 1000000000, not -2"#
            ),
            (
                #"{"event":"restock","item":"\#(String(repeating: "é", count: 101))","quantity":1}"#,
                #""item" must be at most 100 characters long, not 101"#
            ),
            (
                #"{"event":"cancel","id":"\#(String(repeating: "9", count: 101))"}"#,
                #""id" must be at most 100 characters long, not 101"#
            ),
            (#"{"event":"restock","item":"a\nb","quantity":1}"#, #""item" must not contain control characters"#),
        ]
    )
    func badLines(line: String, problem: String) {
        #expect(throws: Event.Problem(problem)) { try Event.parse(line) }
    }

    @Test("the largest quantity and the longest name are accepted, wide characters counted as one")
    func limits() throws {
        let name = String(repeating: "🍎", count: Event.maximumNameLength)
        #expect(
            try Event.parse(#"{"event":"restock","item":"\#(name)","quantity":1000000000}"#)
                == .restock(item: name, quantity: 1_000_000_000)
        )
    }
}

@Suite("The summary's closing line")
struct ClosingLineTests {
    func summary(accepted: Int, applied: Int, shutdown: Summary.Shutdown?, log: Summary.Log?, bad: Int = 0) -> Summary {
        Summary(
            reason: "SIGTERM",
            lines: Summary.Lines(read: accepted + bad, accepted: accepted, bad: bad),
            stock: [:],
            reserved: [:],
            orders: Summary.Orders(reserved: 0, refused: 0, cancelled: 0, duplicates: 0),
            audit: Summary.Audit(events: applied, kinds: [:], outcomes: [:], unitsRestocked: 0),
            shutdown: shutdown,
            log: log
        )
    }

    @Test("with --data, the closing line speaks of this run's events and of the directory's whole history")
    func dataDirectory() {
        var resumed = summary(accepted: 12, applied: 12, shutdown: nil, log: nil)
        resumed.data = Summary.DataDirectory(path: "state", recovered: 9, history: 12)
        #expect(
            resumed.closing
                == (
                    "Stopped on SIGTERM: all 3 accepted events were applied; the data directory state holds all "
                        + "12 events of its history, 9 of them recovered at the start.", false
                )
        )
        var idle = summary(accepted: 9, applied: 9, shutdown: nil, log: nil)
        idle.data = Summary.DataDirectory(path: "state", recovered: 9, history: 9)
        #expect(idle.closing.sentence.hasPrefix("Stopped on SIGTERM: no new event was accepted; "))
        var failed = summary(accepted: 4, applied: 4, shutdown: nil, log: nil)
        failed.data = Summary.DataDirectory(
            path: "state",
            recovered: 0,
            history: 2,
            failure: "Cannot write state/records-1.jsonl: No space left on device."
        )
        #expect(
            failed.closing
                == (
                    "Stopped on SIGTERM: all 4 accepted events were applied; the data directory state stopped "
                        + "recording: Cannot write state/records-1.jsonl: No space left on device.", true
                )
        )
    }

    @Test("events cancelled while stopping, or not written to the log, make it an error in plain words")
    func errors() {
        let cancelled = summary(
            accepted: 10,
            applied: 8,
            shutdown: Summary.Shutdown(inFlight: 5, applied: 3, cancelled: 2, refused: 0, allApplied: false),
            log: nil
        )
        #expect(
            cancelled.closing
                == ("Stopped on SIGTERM: 2 of 10 accepted events were not applied (2 cancelled while stopping).", true)
        )
        let unlogged = summary(
            accepted: 1,
            applied: 1,
            shutdown: Summary.Shutdown(inFlight: 0, applied: 0, cancelled: 0, refused: 0, allApplied: true),
            log: Summary.Log(path: "/dev/full", written: 0, failures: 1),
            bad: 2
        )
        #expect(
            unlogged.closing
                == (
                    "Stopped on SIGTERM: the 1 accepted event was applied; 1 line could not be written to the "
                        + "action log /dev/full; 2 bad lines were skipped.", true
                )
        )
        let nothing = summary(accepted: 0, applied: 0, shutdown: nil, log: nil)
        #expect(nothing.closing == ("Stopped on SIGTERM: no event was accepted.", false))
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
        #expect((0...7).contains(shutdown.inFlight))
        #expect(shutdown.applied == shutdown.inFlight)
        #expect(shutdown.cancelled == 0 && shutdown.refused == 0 && shutdown.allApplied)
        #expect(messages.current.contains("inventory: error: Line 4 was skipped: not valid JSON."))
        #expect(
            messages.current.contains("inventory: notice: Line 3: refused order o-2: 30 x apple wanted, 7 in stock.")
        )
        #expect(
            messages.current.contains(
                "inventory: notice: Line 5: ignored order o-1: an order with this id was already placed."
            )
        )
        #expect(
            messages.current.contains(
                "inventory: notice: Line 8: ignored cancel of order o-2: it holds no reservation."
            )
        )
        let waited = shutdown.inFlight == 0 ? "" : ", \(shutdown.inFlight) of them while stopping"
        #expect(
            summary.closing.sentence
                == "Stopped at the end of input: all 7 accepted events were applied\(waited); 1 bad line was skipped."
        )
        #expect(!summary.closing.isError)
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
