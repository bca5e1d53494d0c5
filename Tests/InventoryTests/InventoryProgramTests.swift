import DispatchStore
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

        let output = try await runInventory(["--log", log, "--quiet"], input: Data(input.utf8), timeout: 300)

        #expect(output.status == 0, "\(output.standardError.suffix(2_000))")
        let summary = try Summary.decode(output.standardOutput)
        #expect(summary.reason == "end of input")
        #expect(summary.lines == Summary.Lines(read: number, accepted: 100_000, bad: badLineNumbers.count))
        #expect(ReferenceInventory(events).matches(summary))
        #expect(summary.shutdown?.idle == true && summary.shutdown?.rejected == 0)
        #expect(summary.log?.written == 100_000)
        for line in badLineNumbers {
            #expect(output.standardError.contains("inventory: line \(line): \"quantity\" must be between"))
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
                if line.hasPrefix("inventory: info: #") { handled += 1 }
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
        #expect(output.standardError.contains("inventory: \(name): finishing the accepted events"))
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
        #expect(output.standardError.contains("inventory: replayed 5000 transactions"))
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
        #expect(truncated.standardError.contains("replayed 10 transactions; skipped truncated line 11"))

        var lines = complete.split(separator: "\n").map(String.init)
        lines[3] = "{\"id\": 4}"
        try (lines.joined(separator: "\n") + "\n").write(toFile: log, atomically: true, encoding: .utf8)
        let malformed = try await runInventory(["--replay", log])
        #expect(malformed.status == 1)
        #expect(malformed.standardError.contains("Line 4 of \(log) is not a valid log entry"))
        #expect(malformed.standardOutput.isEmpty)
    }

    @Test("bad arguments exit 64 with the usage; an unwritable log exits 1 naming the path")
    func arguments() async throws {
        let unknown = try await runInventory(["--frobnicate"])
        #expect(unknown.status == 64)
        #expect(unknown.standardError.contains("unknown argument '--frobnicate'"))
        #expect(unknown.standardError.contains("usage: inventory"))

        let missing = try await runInventory(["--log"])
        #expect(missing.status == 64)
        #expect(missing.standardError.contains("--log needs a path"))

        let path = "/nonexistent-\(UUID().uuidString)/actions.jsonl"
        let unwritable = try await runInventory(["--log", path], input: Data())
        #expect(unwritable.status == 1)
        #expect(unwritable.standardError.contains("Cannot write the action log \(path)"))

        let help = try await runInventory(["--help"])
        #expect(help.status == 0)
        #expect(help.standardOutput.contains("--replay PATH"))
        #expect(help.standardOutput.contains("SIGTERM"))
    }
}

/// Runs the built `inventory` without holding a thread of the cooperative pool.
private func runInventory(
    _ arguments: [String],
    input: Data? = nil,
    timeout: TimeInterval = 300
) async throws -> Executables.Output {
    try await offThePool { try Executables.run("inventory", arguments, input: input, timeout: timeout) }
}
