import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Starts `inventory` with `arguments` and waits until it reads its input, by which time it holds
/// its log's or journal's lock.
private func startInventory(_ arguments: [String]) async throws -> RunningProgram {
    let program = try RunningProgram("inventory", arguments)
    let ready = await offThePool {
        while let line = program.nextErrorLine() {
            if line.hasPrefix("inventory: info: Reading events") { return true }
        }
        return false
    }
    try #require(ready, "inventory did not start: \(program.wait().standardError)")
    return program
}

/// Runs the built `inventory` without holding a thread of the cooperative pool.
private func runInventory(_ arguments: [String], input: Data) async throws -> Executables.Output {
    try await offThePool { try Executables.run("inventory", arguments, input: input) }
}

private let restock = Data(#"{"event":"restock","item":"apple","quantity":3}"#.utf8 + [0x0A])

@Suite("One writer per action log and per journal directory")
struct WriterLockTests {
    @Test("a second ActionLogMiddleware on one log is refused, naming the log, this process and the lock")
    func secondMiddleware() throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let path = scratch.file("actions.jsonl").path
        let first = try ActionLogMiddleware(path: path)
        let error = try #require(throws: ActionLogError.self) { try ActionLogMiddleware(path: path) }
        #expect(error.code == .locked)
        #expect(error.message.contains(path) && error.message.contains("\(path).lock"))
        #expect(error.message.contains("this process (\(getpid())"))
        // Refused before anything changed: the holder's log goes on.
        let dispatcher = try notesDispatcher()
        dispatcher.register(middleware: first)
        dispatcher.dispatch(NoteAction.add("milk"), mode: .sync)
        #expect(first.writtenCount == 1)
        first.close()

        let second = try ActionLogMiddleware(path: path, appending: false)
        second.close()
    }

    @Test("a second Journal on one directory is refused; closing, or failing to open, releases the lock")
    func secondJournal() throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let directory = scratch.file("journal").path
        let first = try Journal(directory: directory, dispatcher: notesDispatcher())
        let error = try #require(throws: JournalError.self) {
            try Journal(directory: directory, dispatcher: notesDispatcher())
        }
        #expect(error.code == .locked)
        #expect(error.message.contains(directory + "/journal.lock"))
        #expect(error.message.contains("this process (\(getpid())"))
        try first.close()

        // A journal that refuses to open (a manifest of a newer format) does not keep the lock.
        let manifest = URL(fileURLWithPath: directory + "/journal.json")
        let original = try Data(contentsOf: manifest)
        try Data(#"{"format":"DispatchStore journal","version":9}"#.utf8).write(to: manifest)
        for _ in 0..<2 {
            #expect(throws: JournalError.self) { try Journal(directory: directory, dispatcher: notesDispatcher()) }
            let refused = try #require(throws: JournalError.self) {
                try Journal(directory: directory, dispatcher: notesDispatcher())
            }
            #expect(refused.code == .newerFormat)
        }
        try original.write(to: manifest)
        try Journal(directory: directory, dispatcher: notesDispatcher()).close()
    }

    @Test("another process's log is refused, naming its process; after kill -9 the lock is free and the log whole")
    func logAcrossProcesses() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let path = scratch.file("actions.jsonl").path
        let holder = try await startInventory(["--log", path])
        holder.write(restock)
        let holderName = "process \(holder.processIdentifier) (inventory)"

        let error = try #require(throws: ActionLogError.self) { try ActionLogMiddleware(path: path) }
        #expect(error.code == .locked && error.message.contains(holderName))
        let second = try await runInventory(["--log", path], input: restock)
        #expect(second.status == 1)
        #expect(second.standardError.contains("Cannot write the action log \(path): it is open for writing already"))
        #expect(second.standardError.contains(holderName))

        holder.send(signal: SIGKILL)
        let killed = await offThePool { holder.wait() }
        #expect(killed.status != 0)
        // The kernel released the lock with the process: the log opens, whole.
        let log = try ActionLogMiddleware(path: path)
        #expect(log.repairedTail == nil)
        log.close()
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
            let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(record?["type"] as? String == "InventoryCore.InventoryAction")
        }
    }

    @Test("another process's journal is refused, naming its process; after kill -9 it reopens with its records")
    func journalAcrossProcesses() async throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let directory = scratch.file("data").path
        let holder = try await startInventory(["--data", directory, "--verbose"])
        holder.write(restock)
        // The journal records an event before the logger reports it.
        let recorded = await offThePool {
            while let line = holder.nextErrorLine() {
                if line.hasPrefix("inventory: info: Line 1:") { return true }
            }
            return false
        }
        #expect(recorded)
        let holderName = "process \(holder.processIdentifier) (inventory)"

        let error = try #require(throws: JournalError.self) {
            try Journal(directory: directory, dispatcher: notesDispatcher())
        }
        #expect(error.code == .locked && error.message.contains(holderName))
        let second = try await runInventory(["--data", directory], input: restock)
        #expect(second.status == 1)
        #expect(second.standardError.contains("Cannot open the journal in \(directory): it is open already"))
        #expect(second.standardError.contains(holderName))

        holder.send(signal: SIGKILL)
        _ = await offThePool { holder.wait() }
        let restarted = try await runInventory(["--data", directory], input: Data())
        #expect(restarted.status == 0, "\(restarted.standardError)")
        #expect(restarted.standardOutput.contains(#""recovered" : 1"#))
    }

    @Test("a log renamed away while appended to keeps getting the lines; the path is free once it is closed")
    func rotationByRename() throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let path = scratch.file("actions.jsonl").path
        let rotated = scratch.file("actions.jsonl.1").path
        let dispatcher = try notesDispatcher()
        let log = try ActionLogMiddleware(path: path)
        dispatcher.register(middleware: log)
        dispatcher.dispatch(NoteAction.add("before"), mode: .sync)
        #expect(rename(path, rotated) == 0)
        dispatcher.dispatch(NoteAction.add("after"), mode: .sync)

        #expect(!FileManager.default.fileExists(atPath: path))
        let notes = try ActionLog.read(contentsOf: rotated, actionTypes: [NoteAction.self]).entries
        #expect(notes.map { $0.action as? NoteAction } == [.add("before"), .add("after")])
        // The lock is the path's until the log is closed: a new log there is refused meanwhile.
        #expect(throws: ActionLogError.self) { try ActionLogMiddleware(path: path) }
        dispatcher.unregister(middleware: log)
        log.close()

        let next = try ActionLogMiddleware(path: path)
        dispatcher.register(middleware: next)
        dispatcher.dispatch(NoteAction.add("next"), mode: .sync)
        next.close()
        let later = try ActionLog.read(contentsOf: path, actionTypes: [NoteAction.self]).entries
        #expect(later.map { $0.action as? NoteAction } == [.add("next")])
    }

    @Test("a log truncated while appended to (copytruncate) gets whole lines from its new end")
    func rotationByTruncation() throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let path = scratch.file("actions.jsonl").path
        let dispatcher = try notesDispatcher()
        let log = try ActionLogMiddleware(path: path, checksums: .none)
        dispatcher.register(middleware: log)
        dispatcher.dispatch(NoteAction.add("one"), mode: .sync)
        dispatcher.dispatch(NoteAction.add("two"), mode: .sync)
        #expect(truncate(path, 0) == 0)
        dispatcher.dispatch(NoteAction.add("three"), mode: .sync)
        log.close()

        let contents = try ActionLog.read(contentsOf: path, actionTypes: [NoteAction.self])
        #expect(contents.tornTail == nil)
        #expect(contents.entries.map { $0.action as? NoteAction } == [.add("three")])
        #expect(log.writtenCount == 3 && log.failureCount == 0)
    }
}
