import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

/// An action type declared `private`: its reflected name embeds an address.
private enum PrivatePing: ActionType, Codable {
    case ping
}

/// A `private` action type that names itself.
private enum NamedPing: ActionType, Codable, Equatable, StablyNamed {
    static let stableName = "Tests.NamedPing"
    case ping(Int)
}

private final class PingReducer<Action: ActionType>: Reducer<Counter, Action> {
    override func reduce(_ action: Action, into state: inout Counter) {
        state.count += 1
    }
}

private func logPath() throws -> (TemporaryDirectory, String) {
    let directory = try TemporaryDirectory()
    return (directory, directory.file("actions.jsonl").path)
}

private func counterDispatcher() throws -> (Dispatcher, Store<Counter, CounterAction>) {
    let dispatcher = Dispatcher()
    let store = makeCounterStore()
    try dispatcher.register(store: store)
    return (dispatcher, store)
}

/// Writes `count` lines with a fresh dispatcher and closes the log.
private func writeLines(_ count: Int, to path: String) throws {
    let (dispatcher, _) = try counterDispatcher()
    let log = try ActionLogMiddleware(path: path)
    dispatcher.register(middleware: log)
    for _ in 0..<count {
        dispatcher.dispatch(CounterAction.add(1), mode: .sync)
    }
    log.close()
}

private func append(_ text: String, to path: String) throws {
    let handle = try #require(FileHandle(forWritingAtPath: path))
    handle.seekToEndOfFile()
    handle.write(Data(text.utf8))
    handle.closeFile()
}

@Suite("Action log: crash-safe append, loud failures, stable type names")
struct ActionLogAppendTests {
    @Test("reopening a log with a torn tail cuts it away, saves it, and reports it before the first new line")
    func tornTailIsCutBeforeAppending() throws {
        let (directory, path) = try logPath()
        defer { directory.remove() }
        try writeLines(3, to: path)
        let intact = try Data(contentsOf: URL(fileURLWithPath: path))
        let torn = #"{"id":99,"time":"2026-11-21T10:00:00.000Z","mode":"sync","stor"#
        try append(torn, to: path)

        let events = Shared<[String]>([])
        let (dispatcher, _) = try counterDispatcher()
        let log = try ActionLogMiddleware(path: path) { error in
            events.append("error \(error.code) line \(error.line ?? 0) byte \(error.byteOffset ?? -1)")
        }
        dispatcher.register(middleware: log)
        events.append("opened")
        dispatcher.dispatch(CounterAction.add(5), mode: .sync)

        #expect(events.current == ["error tornTail line 4 byte \(intact.count)", "opened"])
        let tail = try #require(log.repairedTail)
        #expect(tail.line == 4 && tail.byteOffset == intact.count && tail.byteCount == torn.utf8.count)
        let saved = try #require(tail.savedPath)
        #expect(try String(contentsOfFile: saved, encoding: .utf8) == torn)
        let contents = try ActionLog.read(contentsOf: path, actionTypes: [CounterAction.self])
        #expect(contents.tornTail == nil)
        #expect(contents.entries.map { $0.action as? CounterAction } == [.add(1), .add(1), .add(1), .add(5)])
    }

    @Test("a last line that is complete but not JSON is cut too; two such lines make the log refuse to open")
    func garbageLastLine() throws {
        let (directory, path) = try logPath()
        defer { directory.remove() }
        try writeLines(2, to: path)
        try append("\u{0}\u{0}\u{0}garbage\n", to: path)
        let log = try ActionLogMiddleware(path: path)
        #expect(log.repairedTail?.line == 3)
        log.close()
        #expect(try ActionLog.read(contentsOf: path, actionTypes: [CounterAction.self]).entries.count == 2)

        try append("not json\nnot json either\n", to: path)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect {
            try ActionLogMiddleware(path: path)
        } throws: { error in
            guard let error = error as? ActionLogError else { return false }
            return error.code == .malformedLine && error.message.contains(path)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test("readers skip and report a torn tail, also one that is valid JSON without its newline")
    func readersReportTornTails() throws {
        let (directory, path) = try logPath()
        defer { directory.remove() }
        try writeLines(2, to: path)
        let complete = try lines(path)
        try append(complete[0], to: path)

        let contents = try ActionLog.read(contentsOf: path, actionTypes: [CounterAction.self])
        #expect(contents.entries.count == 2)
        #expect(contents.tornTail?.line == 3)
        #expect(contents.truncatedLine == 3)

        try append("\n{\"broken\n\n", to: path)
        let again = try ActionLog.read(contentsOf: path, actionTypes: [CounterAction.self])
        #expect(again.entries.count == 3)
        #expect(again.tornTail?.line == 4)
    }

    @Test("a write that fails is an error the program hears of: onError, firstFailure and the counts")
    func failedWritesAreLoud() throws {
        let (dispatcher, _) = try counterDispatcher()
        let errors = Shared<[ActionLogError]>([])
        let log = try ActionLogMiddleware(path: "/dev/full") { errors.append($0) }
        dispatcher.register(middleware: log)
        let transaction = dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)

        #expect(log.writtenCount == 0)
        #expect(log.failureCount == 2)
        let failure = try #require(log.firstFailure)
        #expect(failure.code == .unwritableFile)
        #expect(failure.message.contains("/dev/full"))
        #expect(failure.message.contains("transaction #\(transaction.id) was not written"))
        #expect(errors.current.count == 2)
    }

    @Test("an action type declared private is refused with an error naming it and how to fix it")
    func unstableTypeNamesAreRefused() throws {
        let (directory, path) = try logPath()
        defer { directory.remove() }
        let dispatcher = Dispatcher()
        try dispatcher.register(store: Store<Counter, PrivatePing>(identifier: "pings", reducer: PingReducer()))
        let errors = Shared<[ActionLogError]>([])
        let log = try ActionLogMiddleware(path: path) { errors.append($0) }
        dispatcher.register(middleware: log)
        dispatcher.dispatch(PrivatePing.ping, mode: .sync)

        #expect(log.writtenCount == 0)
        let error = try #require(errors.current.first)
        #expect(error.code == .unstableTypeName)
        #expect(error.message.contains("PrivatePing"))
        #expect(error.message.contains("StablyNamed"))
        #expect(log.firstFailure?.code == .unstableTypeName)
        #expect {
            try ActionLog.read(contentsOf: path, actionTypes: [PrivatePing.self])
        } throws: { error in
            (error as? ActionLogError)?.code == .unstableTypeName
        }
    }

    @Test("a private type with a stable name is written under that name and read back")
    func stablyNamedTypesRoundTrip() throws {
        let (directory, path) = try logPath()
        defer { directory.remove() }
        let dispatcher = Dispatcher()
        try dispatcher.register(store: Store<Counter, NamedPing>(identifier: "pings", reducer: PingReducer()))
        let log = try ActionLogMiddleware(path: path)
        dispatcher.register(middleware: log)
        dispatcher.dispatch(NamedPing.ping(7), mode: .sync)

        #expect(ActionLog.typeName(of: NamedPing.self) == "Tests.NamedPing")
        #expect(try lines(path)[0].contains(#""type":"Tests.NamedPing""#))
        let entries = try ActionLog.read(contentsOf: path, actionTypes: [NamedPing.self]).entries
        #expect(entries.map { $0.action as? NamedPing } == [.ping(7)])
    }

    @Test("reading streams: entries arrive while the file is still being written, long before its end")
    func readingStreams() async throws {
        let (directory, path) = try logPath()
        defer { directory.remove() }
        try writeLines(300, to: path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let pipe = directory.file("pipe.jsonl").path
        #expect(mkfifo(pipe, 0o600) == 0)
        // The writer keeps the pipe open until the reader has seen 200 entries: a reader that
        // needed the whole file first would wait for an end that comes only after that.
        let seenEnough = Gate()
        let writerTimedOut = Shared(false)
        Thread.detachNewThread {
            guard let handle = FileHandle(forWritingAtPath: pipe) else { return }
            handle.write(bytes)
            if !seenEnough.wait() { writerTimedOut.withLock { $0 = true } }
            handle.closeFile()
        }

        let seen = try await offThePool {
            var seen = 0
            _ = try ActionLog.forEachEntry(in: pipe, actionTypes: [CounterAction.self]) { _ in
                seen += 1
                if seen == 200 { seenEnough.open() }
            }
            return seen
        }

        #expect(seen == 300)
        #expect(!writerTimedOut.current)
    }

    @Test("forEachEntry streams every entry, and stops at a malformed line after giving the ones before")
    func streamingRead() throws {
        let (directory, path) = try logPath()
        defer { directory.remove() }
        try writeLines(1_000, to: path)
        var seen = 0
        let summary = try ActionLog.forEachEntry(in: path, actionTypes: [CounterAction.self]) { entry in
            seen += 1
            #expect(entry.sequenceNumbers == [UInt64(seen)])
        }
        #expect(summary.entryCount == 1_000 && seen == 1_000)

        struct Enough: Error {}
        seen = 0
        #expect(throws: Enough.self) {
            try ActionLog.forEachEntry(in: path, actionTypes: [CounterAction.self]) { _ in
                seen += 1
                if seen == 10 { throw Enough() }
            }
        }
        #expect(seen == 10)

        try append("{\"id\": 1}\n", to: path)
        try writeLines(1, to: path)
        seen = 0
        #expect {
            try ActionLog.forEachEntry(in: path, actionTypes: [CounterAction.self]) { _ in seen += 1 }
        } throws: { error in
            (error as? ActionLogError)?.line == 1_001
        }
        #expect(seen == 1_000)
    }
}

private func lines(_ path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
}
