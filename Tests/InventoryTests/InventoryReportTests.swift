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

@Suite("The inventory's page (--report)")
struct InventoryReportTests {
    private func input(_ events: [GeneratedEvent]) -> Data {
        Data(events.map { $0.line + "\n" }.joined().utf8)
    }

    @Test(
        "a run with --log and --report: the page holds every event, its stores and states, and the program says where it is"
    )
    func liveRun() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let page = directory.file("page.html").path
        let events = GeneratedEvent.generate(500)
        let output = try await offThePool {
            try Executables.run("inventory", ["--log", log, "--report", page, "--quiet"], input: input(events))
        }
        #expect(output.status == 0, "\(output.standardError)")
        #expect(!output.standardError.contains("The page"))  // quiet
        let run = try await offThePool { try Executables.run("inventory", ["--report", page], input: input(events)) }
        #expect(run.status == 0)
        #expect(run.standardError.contains("inventory: info: The page \(page) shows 500 transactions ("))
        let read = try InspectorPage(path: page)
        #expect(read.rowKinds == Array(repeating: 0, count: 500))
        #expect((read.data["stores"] as? [[String: Any]])?.map { $0["id"] as? String } == ["stock", "orders", "audit"])
        #expect(read.data["title"] as? String == "inventory" && read.source["kind"] as? String == "live")
    }

    @Test("--replay LOG --report: the log's ids and lines; a line that cannot be read is on the page and the exit is 1")
    func replay() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let page = directory.file("replay.html").path
        _ = try await offThePool {
            try Executables.run("inventory", ["--log", log, "--quiet"], input: input(GeneratedEvent.generate(200)))
        }
        let logged = try ActionLog.read(contentsOf: log, actionTypes: [InventoryAction.self])

        let output = try await offThePool { try Executables.run("inventory", ["--replay", log, "--report", page]) }
        #expect(output.status == 0, "\(output.standardError)")
        #expect(output.standardError.contains("inventory: info: The page \(page) shows 200 transactions ("))
        let read = try InspectorPage(path: page)
        #expect(read.transactionIDs == logged.entries.map(\.id))
        #expect(read.transactionExtras.map { $0["line"] as? Int } == logged.entries.map(\.line))
        #expect(read.source["kind"] as? String == "log" && read.source["path"] as? String == log)
        // The logged mode (the service dispatches .serial), not the replay's .sync.
        #expect(read.rows.allSatisfy { ($0[0] as? NSNumber)?.intValue != 0 || ($0[4] as? NSNumber)?.intValue == 2 })

        var lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.insert("{\"id\": 77, not json", at: 10)
        try (lines.joined(separator: "\n") + "\n").write(toFile: log, atomically: true, encoding: .utf8)
        let damaged = try await offThePool { try Executables.run("inventory", ["--replay", log, "--report", page]) }
        #expect(damaged.status == 1)
        #expect(damaged.standardError.contains("DIVERGED (1 problem): Line 11 of \(log) is not a valid log entry"))
        let reread = try InspectorPage(path: page)
        #expect(reread.rowKinds.filter { $0 == 1 }.count == 1 && reread.rowKinds[10] == 1)
        #expect(reread.transactionIDs == logged.entries.map(\.id))
    }

    @Test(
        "--data DIR --report: the page begins with the recovery (the snapshot, then the records after it), then the run"
    )
    func journal() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.file("data").path
        let page = directory.file("data.html").path
        let events = GeneratedEvent.generate(130)
        // No last snapshot: the process is killed, so the next start replays the records after snapshot 100.
        let first = try RunningProgram("inventory", ["--data", data, "--snapshot-every", "50", "--verbose"])
        #expect(first.write(input(events)))
        var handled = 0
        while handled < 130, let line = first.nextErrorLine() {
            if line.hasPrefix("inventory: info: Line ") { handled += 1 }
        }
        #expect(handled == 130)
        first.send(signal: SIGKILL)
        _ = first.wait()

        let output = try await offThePool {
            try Executables.run(
                "inventory",
                ["--data", data, "--report", page],
                input: input(Array(events.prefix(20)))
            )
        }
        #expect(output.status == 0, "\(output.standardError)")
        let read = try InspectorPage(path: page)
        #expect(read.rowKinds == [2] + Array(repeating: 0, count: 30 + 20))
        #expect((read.rows[0][3] as? String)?.hasPrefix("Snapshot 2: the states after 100 records") == true)
        #expect(read.transactionExtras.prefix(30).map { $0["line"] as? Int } == (1...30).map { $0 })
        #expect(read.transactionExtras.suffix(20).allSatisfy { $0["line"] == nil })
        #expect(read.source["kind"] as? String == "journal")
    }

    @Test("a running inventory writes the page when it receives SIGUSR1, and again at the end")
    func signal() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let page = directory.file("page.html").path
        let program = try RunningProgram("inventory", ["--report", page, "--verbose"])
        let events = GeneratedEvent.generate(300)
        #expect(program.write(input(Array(events.prefix(100)))))
        let found = await offThePool { () -> Bool in
            var handled = 0
            while handled < 100, let line = program.nextErrorLine() {
                if line.hasPrefix("inventory: info: Line ") { handled += 1 }
            }
            program.send(signal: SIGUSR1)
            while let line = program.nextErrorLine() {
                if line.hasPrefix("inventory: info: The page \(page) shows 100 transactions") { return true }
            }
            return false
        }
        #expect(found)
        #expect(try InspectorPage(path: page).rowKinds.count == 100)
        #expect(program.write(input(Array(events.suffix(200)))))
        program.closeInput()
        let output = await offThePool { program.wait() }
        #expect(output.status == 0)
        #expect(try InspectorPage(path: page).rowKinds.count == 300)
    }

    @Test(
        "a --report path that cannot be written gets the same clear error as --log, before anything runs",
        arguments: ["missing/page.html", "", "loop"]
    )
    func badPath(name: String) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let loop = directory.file("loop").path
        try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop)
        let path = name.isEmpty ? directory.url.path : directory.file(name).path
        let reason = [
            "missing/page.html":
                "No such file or directory (the directory \(directory.file("missing").path) does not exist)",
            "": "it is a directory", "loop": "Too many levels of symbolic links (a symbolic link loop)",
        ][name]!
        let output = try await offThePool { try Executables.run("inventory", ["--report", path], input: input([])) }
        #expect(output.status == 1)
        #expect(output.standardError == "inventory: error: Cannot write the page \(path): \(reason).\n")
        #expect(output.standardOutput.isEmpty)
    }
}
