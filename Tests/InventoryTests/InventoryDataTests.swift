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

@Suite("The inventory program with --data: recovery, kill -9, and a log that survives restarts")
struct InventoryDataTests {
    @Test(
        "kill -9 at any moment: a restart recovers a prefix of the events, and the rest ends as one run does",
        arguments: [300, 2_600, 6_100]
    )
    func killNine(after handled: Int) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.file("data").path
        let events = GeneratedEvent.generate(10_000, seed: UInt64(handled))
        let program = try RunningProgram("inventory", ["--data", data, "--snapshot-every", "1000", "--verbose"])
        let writer = Thread { _ = program.write(Data(events.map { $0.line + "\n" }.joined().utf8)) }
        writer.start()
        // The journal records an event before the logger reports it, so these are recorded.
        let seen = await offThePool {
            var seen = 0
            while seen < handled, let line = program.nextErrorLine() {
                if line.hasPrefix("inventory: info: Line ") { seen += 1 }
            }
            return seen
        }
        #expect(seen == handled)
        program.send(signal: SIGKILL)
        let killed = await offThePool { program.wait() }
        #expect(killed.status != 0 && killed.standardOutput.isEmpty)

        // A restart with no input: the state of the first `recovered` events, nothing mixed.
        let restarted = try await runInventory(["--data", data], input: Data())
        #expect(restarted.status == 0, "\(restarted.standardError)")
        let prefix = try Summary.decode(restarted.standardOutput)
        let recovered = try #require(prefix.data?.recovered)
        #expect(recovered >= handled && recovered <= events.count)
        #expect(prefix.data?.history == recovered && prefix.lines.accepted == recovered)
        #expect(ReferenceInventory(events.prefix(recovered)).matches(prefix))

        // Feeding the events after them ends where one uninterrupted run ends.
        let rest = Data(events.dropFirst(recovered).map { $0.line + "\n" }.joined().utf8)
        let finished = try await runInventory(["--data", data, "--quiet"], input: rest)
        #expect(finished.status == 0, "\(finished.standardError)")
        let final = try Summary.decode(finished.standardOutput)
        #expect(final.lines.accepted == events.count && final.data?.history == events.count)
        #expect(ReferenceInventory(events).matches(final))
    }

    @Test("--log appends across restarts with --data, so that --replay of it reproduces the whole history")
    func logAcrossRestarts() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.file("data").path
        let log = directory.file("actions.jsonl").path
        let events = GeneratedEvent.generate(3_000, seed: 9)
        let lines = events.map { $0.line + "\n" }
        for part in [lines[0..<1_000], lines[1_000..<2_200], lines[2_200...]] {
            let output = try await runInventory(
                ["--data", data, "--snapshot-every", "500", "--log", log, "--quiet"],
                input: Data(part.joined().utf8)
            )
            #expect(output.status == 0, "\(output.standardError)")
        }

        let logged = try ActionLog.read(contentsOf: log, actionTypes: [InventoryAction.self])
        #expect(logged.entries.map { $0.action as? InventoryAction } == events.map(\.action))
        let replayed = try await runInventory(["--replay", log], input: Data())
        #expect(replayed.status == 0, "\(replayed.standardError)")
        #expect(ReferenceInventory(events).matches(try Summary.decode(replayed.standardOutput)))
    }

    @Test("a log cut short by a crash is repaired before appending, and the cut is reported as a notice")
    func tornLog() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.file("data").path
        let log = directory.file("actions.jsonl").path
        let events = GeneratedEvent.generate(20, seed: 4)
        let first = events.prefix(10).map { $0.line + "\n" }.joined()
        _ = try await runInventory(["--data", data, "--log", log, "--quiet"], input: Data(first.utf8))
        let handle = try #require(FileHandle(forWritingAtPath: log))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"id":11,"time":"2026-11"#.utf8))
        handle.closeFile()

        let rest = events.dropFirst(10).map { $0.line + "\n" }.joined()
        let output = try await runInventory(["--data", data, "--log", log], input: Data(rest.utf8))

        #expect(output.status == 0, "\(output.standardError)")
        // Line 11 is the checkpoint the first run wrote when it closed its log.
        #expect(output.standardError.contains("inventory: notice: Line 12 of \(log) (24 bytes from byte"))
        #expect(output.standardError.contains("was cut away before appending"))
        let logged = try ActionLog.read(contentsOf: log, actionTypes: [InventoryAction.self])
        #expect(logged.truncatedLine == nil)
        #expect(logged.entries.map { $0.action as? InventoryAction } == events.map(\.action))
    }

    @Test("a log holding an earlier run is refused without --data, naming it, and left as it was")
    func logOfAnotherRun() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let input = Data(GeneratedEvent.generate(5, seed: 2).map { $0.line + "\n" }.joined().utf8)
        _ = try await runInventory(["--log", log, "--quiet"], input: input)
        let before = try Data(contentsOf: URL(fileURLWithPath: log))

        let output = try await runInventory(["--log", log], input: input)

        #expect(output.status == 1)
        #expect(output.standardOutput.isEmpty)
        #expect(
            output.standardError.contains(
                "inventory: error: The action log \(log) already holds events of an earlier run"
            )
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: log)) == before)
    }

    @Test("a data directory that cannot be created exits 1 naming it and what is in the way")
    func unusableDirectory() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("plain").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data("keep".utf8)))

        let output = try await runInventory(["--data", file + "/data"], input: Data())

        #expect(output.status == 1)
        #expect(
            output.standardError.contains(
                "inventory: error: Cannot create the journal directory \(file)/data: \(file) is a file."
            )
        )
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data("keep".utf8))
    }
}

/// Runs the built `inventory` without holding a thread of the cooperative pool.
private func runInventory(_ arguments: [String], input: Data) async throws -> Executables.Output {
    try await offThePool { try Executables.run("inventory", arguments, input: input) }
}
