import DispatchStore
import DispatchStoreJournal
import Foundation
import InventoryCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("The inventory program")
struct InventoryProgramTests {
    @Test("100,000 generated events: the summary matches totals computed independently, the log holds every event")
    func hundredThousandEvents() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let events = GeneratedEvent.generate(100_000)
        var input = ""
        var badLineNumbers: [Int] = []
        var number = 0
        for (index, event) in events.enumerated() {
            if index % 9_973 == 5 {
                number += 1
                input += "{\"event\": \"restock\", \"item\": \"apple\", \"quantity\": -1}\n"
                badLineNumbers.append(number)
            }
            number += 1
            input += event.line + "\n"
        }

        let output = try await runInventory(["--log", log, "--quiet"], input: Data(input.utf8))

        #expect(output.status == 0, "\(output.standardError.suffix(2_000))")
        let summary = try Summary.decode(output.standardOutput)
        #expect(summary.reason == "end of input")
        #expect(summary.lines == Summary.Lines(read: number, accepted: 100_000, bad: badLineNumbers.count))
        #expect(ReferenceInventory(events).matches(summary))
        #expect(summary.shutdown?.allApplied == true && summary.shutdown?.refused == 0)
        #expect(summary.log?.written == 100_000)
        for line in badLineNumbers {
            #expect(
                output.standardError.contains(
                    "inventory: error: Line \(line) was skipped: \"quantity\" must be between"
                )
            )
        }
        let logged = try ActionLog.read(contentsOf: log, actionTypes: [InventoryAction.self])
        #expect(logged.entries.count == 100_000)
        #expect(logged.entries.map { $0.action as? InventoryAction } == events.map(\.action))
    }

    @Test(
        "a signal mid-stream: every accepted event is in the summary and in the log, and the exit is 0",
        arguments: [
            SIGTERM, SIGINT,
        ]
    )
    func signalMidStream(signal: Int32) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let events = GeneratedEvent.generate(100_000, seed: UInt64(signal))
        let program = try RunningProgram("inventory", ["--log", log, "--verbose"])
        let input = Data(events.map { $0.line + "\n" }.joined().utf8)
        let writer = Thread { _ = program.write(input) }
        writer.start()

        // Standard input stays open: the signal, not the end of input, stops the service.
        let handled = await offThePool {
            var handled = 0
            while handled < 2_000, let line = program.nextErrorLine() {
                if line.hasPrefix("inventory: info: Line ") { handled += 1 }
            }
            return handled
        }
        #expect(handled == 2_000)
        program.send(signal: signal)
        let output = await offThePool { program.wait() }

        #expect(output.status == 0)
        #expect(!output.timedOut)
        let summary = try Summary.decode(output.standardOutput)
        let name = signal == SIGTERM ? "SIGTERM" : "SIGINT"
        #expect(summary.reason == name)
        let accepted = summary.lines.accepted
        #expect(accepted >= 2_000 && accepted <= events.count)
        #expect(summary.audit.events == accepted)
        #expect(ReferenceInventory(events.prefix(accepted)).matches(summary))
        let logged = try ActionLog.read(contentsOf: log, actionTypes: [InventoryAction.self])
        #expect(logged.truncatedLine == nil)
        #expect(logged.entries.map { $0.action as? InventoryAction } == events.prefix(accepted).map(\.action))
        #expect(output.standardError.contains("inventory: info: Stopping (\(name)): no more input is read"))
        #expect(
            output.standardError.contains(
                "inventory: info: Stopped on \(name): all \(accepted) accepted events were applied"
            )
        )
    }

    @Test("--replay plays a log back into fresh stores and prints the same totals")
    func replay() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let events = GeneratedEvent.generate(5_000, seed: 3)
        let input = Data(events.map { $0.line + "\n" }.joined().utf8)
        let original = try Summary.decode(
            try await runInventory(["--log", log, "--quiet"], input: input).standardOutput
        )

        let output = try await runInventory(["--replay", log])

        #expect(output.status == 0)
        let replayed = try Summary.decode(output.standardOutput)
        #expect(replayed.reason == "replay of \(log)")
        #expect(replayed.stock == original.stock && replayed.reserved == original.reserved)
        #expect(replayed.orders == original.orders && replayed.audit == original.audit)
        #expect(ReferenceInventory(events).matches(replayed))
        #expect(
            output.standardError.contains(
                "inventory: info: Replay of \(log): replayed 5000 transactions; 3 checksums matched."
            )
        )
    }

    @Test("--replay skips a truncated last line and stops at a malformed one, naming it")
    func replayOfDamagedLogs() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let input = Data(GeneratedEvent.generate(10, seed: 5).map { $0.line + "\n" }.joined().utf8)
        _ = try await runInventory(["--log", log, "--quiet"], input: input)
        let complete = try String(contentsOfFile: log, encoding: .utf8)

        try (complete + #"{"id":11,"time":"2026"#).write(toFile: log, atomically: true, encoding: .utf8)
        let truncated = try await runInventory(["--replay", log])
        #expect(truncated.status == 0)
        #expect(try Summary.decode(truncated.standardOutput).audit.events == 10)
        // Line 11 is the checkpoint the log writes when it closes.
        #expect(
            truncated.standardError.contains("replayed 10 transactions; 3 checksums matched; skipped truncated line 12")
        )

        var lines = complete.split(separator: "\n").map(String.init)
        lines[3] = "{\"id\": 4}"
        try (lines.joined(separator: "\n") + "\n").write(toFile: log, atomically: true, encoding: .utf8)
        let malformed = try await runInventory(["--replay", log])
        #expect(malformed.status == 1)
        #expect(malformed.standardError.contains("Line 4 of \(log) is not a valid log entry"))
        #expect(malformed.standardOutput.isEmpty)
    }

    @Test(
        "a bad command line exits 64 with the problem and a one-line usage, not the help",
        arguments: [
            (["--frobnicate"], "unknown option '--frobnicate'"),
            (["--log"], "--log needs a PATH"),
            (["--log", "--quiet"], "--log needs a PATH"),
            (["--log=a", "--log", "b"], "--log is given twice"),
            (["--quiet", "--verbose"], "--quiet and --verbose cannot be used together"),
            (["--replay", "a.jsonl", "--log", "b.jsonl"], "--replay and --log cannot be used together"),
            (["events.jsonl"], "unexpected argument 'events.jsonl'; events come on standard input"),
            (
                ["--nats", "nats://127.0.0.1:4222"],
                "--nats needs the inventory built from Integrations/DispatchStoreNATS: "
                    + "swift run --package-path Integrations/DispatchStoreNATS inventory --nats URL"
            ),
        ]
    )
    func badCommandLines(arguments: [String], problem: String) async throws {
        let output = try await runInventory(arguments, input: Data())
        #expect(output.status == 64)
        #expect(output.standardOutput.isEmpty)
        let lines = output.standardError.split(separator: "\n").map(String.init)
        #expect(lines == ["inventory: \(problem)", InventoryOptions.shortUsage])
    }

    @Test("--help prints the whole usage on standard output and exits 0")
    func help() async throws {
        let help = try await runInventory(["--help"])
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("--replay PATH"))
        #expect(help.standardOutput.contains("SIGTERM"))
        #expect(help.standardOutput.contains("longer than \(Event.maximumNameLength) characters"))
        #expect(help.standardError.isEmpty)
    }

    @Test("a log that cannot be opened, or written, exits 1 with the reason naming the file")
    func writeFailures() async throws {
        let path = "/nonexistent-\(UUID().uuidString)/actions.jsonl"
        let unopenable = try await runInventory(["--log", path], input: Data())
        #expect(unopenable.status == 1)
        #expect(unopenable.standardError.contains("inventory: error: Cannot write the action log \(path)"))

        let events = GeneratedEvent.generate(20, seed: 9).map { $0.line + "\n" }.joined()
        let full = try await runInventory(["--log", "/dev/full"], input: Data(events.utf8))
        #expect(full.status == 1)
        let errors = full.standardError.split(separator: "\n").filter { $0.hasPrefix("inventory: error: ") }
        // The first failures one by one, a note, and the closing line.
        #expect(errors.count == InventoryService.reportedWriteFailures + 2)
        #expect(errors.first?.contains("Cannot write the action log /dev/full: No space left on device") == true)
        let closing = try #require(errors.last)
        #expect(closing.hasPrefix("inventory: error: Stopped at the end of input: all 20 accepted events were applied"))
        // 20 events, and the checkpoint of the stores' checksums that closing the log writes.
        #expect(closing.hasSuffix("; 21 lines could not be written to the action log /dev/full."))
        #expect(try Summary.decode(full.standardOutput).log?.failures == 21)
    }

    @Test("a summary that cannot be written to standard output exits 1 saying so")
    func unwritableOutput() async throws {
        let output = try await offThePool {
            try Executables.run("inventory", [], input: Data("\n".utf8), standardOutputPath: "/dev/full")
        }
        #expect(output.status == 1)
        #expect(
            output.standardError.contains(
                "inventory: error: Cannot write the summary to standard output: No space left on device."
            )
        )
    }

    @Test("--quiet writes errors only; notices name the input line; the closing line says what became of the events")
    func messages() async throws {
        let input = [
            #"{"event":"restock","item":"apple","quantity":10}"#,
            "",
            "not json",
            #"{"event":"order","id":"o-1","item":"apple","quantity":30}"#,
            #"{"event":"cancel","id":"o-9"}"#,
        ].joined(separator: "\n")

        let normal = try await runInventory([], input: Data(input.utf8))
        #expect(normal.status == 0)
        let lines = normal.standardError.split(separator: "\n").map(String.init)
        #expect(lines.contains("inventory: error: Line 3 was skipped: not valid JSON."))
        #expect(lines.contains("inventory: notice: Line 4: refused order o-1: 30 x apple wanted, 10 in stock."))
        #expect(lines.contains("inventory: notice: Line 5: ignored cancel of order o-9: no such order."))
        // How many were still being applied when the input ended depends on timing: 0 to 3.
        let closing = try #require(lines.last)
        #expect(closing.hasPrefix("inventory: info: Stopped at the end of input: all 3 accepted events were applied"))
        #expect(closing.hasSuffix("; 1 bad line was skipped."))
        for line in lines {
            #expect(
                line.hasPrefix("inventory: error: ") || line.hasPrefix("inventory: notice: ")
                    || line.hasPrefix("inventory: info: "),
                "\(line)"
            )
        }

        let quiet = try await runInventory(["--quiet"], input: Data(input.utf8))
        #expect(quiet.status == 0)
        #expect(quiet.standardError == "inventory: error: Line 3 was skipped: not valid JSON.\n")
        #expect(try Summary.decode(quiet.standardOutput).lines == Summary.Lines(read: 5, accepted: 3, bad: 1))

        let verbose = try await runInventory(["--verbose"], input: Data(input.utf8))
        #expect(verbose.standardError.contains("inventory: info: Line 1: restocked 10 x apple."))
    }

    @Test("quantities out of range, invalid UTF-8, long names and long lines are bad input naming the line")
    func badInput() async throws {
        let longName = String(repeating: "x", count: Event.maximumNameLength + 1)
        let hugeName = String(repeating: "y", count: 1_000_000)
        let hugeLine = #"{"event":"restock","item":"\#(hugeName)","quantity":1}"#
        var input = Data()
        for line in [
            #"{"event":"restock","item":"apple","quantity":9223372036854775807}"#,
            #"{"event":"restock","item":"apple","quantity":-3}"#,
            #"{"event":"restock","item":"\#(longName)","quantity":1}"#,
            hugeLine,
            #"{"event":"restock","item":"a\u001B[2Jb","quantity":1}"#,
        ] {
            input.append(contentsOf: Array(line.utf8) + [10])
        }
        input.append(
            contentsOf: Array(#"{"event":"restock","item":"pe"#.utf8) + [0xFF] + Array(#"ar","quantity":1}"#.utf8) + [
                10
            ]
        )
        input.append(contentsOf: Array(#"{"event":"restock","item":"plum","quantity":4}"#.utf8) + [10])

        let output = try await runInventory(["--quiet"], input: input)
        #expect(output.status == 0)
        let lines = output.standardError.split(separator: "\n").map(String.init)
        #expect(
            lines == [
                #"inventory: error: Line 1 was skipped: "quantity" must be between 1 and 1000000000, not 9223372036854775807."#,
                #"inventory: error: Line 2 was skipped: "quantity" must be between 1 and 1000000000, not -3."#,
                #"inventory: error: Line 3 was skipped: "item" must be at most 100 characters long, not 101."#,
                "inventory: error: Line 4 was skipped: it is \(hugeLine.utf8.count) bytes long, more than 65536.",
                #"inventory: error: Line 5 was skipped: "item" must not contain control characters."#,
                "inventory: error: Line 6 was skipped: it is not valid UTF-8.",
            ]
        )
        let summary = try Summary.decode(output.standardOutput)
        #expect(summary.lines == Summary.Lines(read: 7, accepted: 1, bad: 6))
        #expect(summary.stock == ["plum": 4])
    }
}

/// Runs the built `inventory` without holding a thread of the cooperative pool.
private func runInventory(_ arguments: [String], input: Data? = nil) async throws -> Executables.Output {
    try await offThePool { try Executables.run("inventory", arguments, input: input) }
}
