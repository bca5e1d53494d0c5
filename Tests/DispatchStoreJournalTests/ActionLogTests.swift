import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

/// A fresh path in a new temporary directory.
private func temporaryLogPath(_ name: String = "actions.jsonl") throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("action-log-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory.appendingPathComponent(name).path
}

private func lines(of path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
}

private func object(_ line: String) throws -> [String: Any] {
    try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

/// Two counters, the second waiting for the first, plus a text store.
private func makeDispatcher() throws -> Dispatcher {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: makeCounterStore("counter", reducer: CounterReducer()))
    try dispatcher.register(store: makeCounterStore("totals", waitsFor: ["counter"]))
    try dispatcher.register(store: Store<Text, TextAction>(identifier: "text", reducer: TextReducer()))
    return dispatcher
}

private func counts(_ dispatcher: Dispatcher) -> [Int] {
    ["counter", "totals"].map { (dispatcher.store(with: $0) as? Store<Counter, CounterAction>)?.state.count ?? -1 }
}

@Suite("Action log and replay")
struct ActionLogTests {
    @Test("one line per handled transaction, with id, time, mode, stores, type and payload")
    func writesOneLinePerTransaction() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        let log = try ActionLogMiddleware(path: path)
        dispatcher.register(middleware: log)

        let first = dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        dispatcher.dispatch(CounterAction.increase, to: "totals", mode: .sync)
        dispatcher.dispatch(TextAction.append("not Codable"), mode: .sync)
        dispatcher.dispatch(UnhandledAction(), mode: .sync)

        let written = try lines(of: path)
        #expect(written.count == 2)
        #expect(log.writtenCount == 2)
        #expect(log.skippedCount == 1)
        #expect(log.failureCount == 0)
        let line = try object(written[0])
        #expect((line["id"] as? NSNumber)?.uint64Value == first.id)
        #expect(line["mode"] as? String == "sync")
        #expect(line["stores"] as? [String] == ["counter", "totals"])
        #expect(line["type"] as? String == ActionLog.typeName(of: CounterAction.self))
        #expect(line["target"] == nil)
        let payload = try #require(line["payload"] as? [String: Any])
        #expect((payload["add"] as? [String: Any])?["_0"] as? Int == 5)
        let time = try #require(line["time"] as? String)
        #expect(time.hasSuffix("Z") && time.contains("."))
        let targeted = try object(written[1])
        #expect(targeted["target"] as? String == "totals")
        #expect(targeted["stores"] as? [String] == ["totals"])
    }

    @Test("a line is on disk before the transaction's completion runs")
    func lineIsWrittenBeforeTheCompletion() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        dispatcher.register(middleware: try ActionLogMiddleware(path: path))
        let seen = Shared<[Int]>([])
        let done = Gate()
        for _ in 0..<3 {
            dispatcher.dispatch(CounterAction.increase, mode: .serial) { _ in
                seen.append((try? lines(of: path).count) ?? -1)
                if seen.current.count == 3 { done.open() }
            }
        }
        #expect(done.wait())
        #expect(seen.current == [1, 2, 3])
    }

    @Test("concurrent transactions each get one whole line")
    func concurrentWriters() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        let log = try ActionLogMiddleware(path: path, syncsToDisk: false)
        dispatcher.register(middleware: log)
        concurrently(4) { _ in
            for index in 0..<500 {
                dispatcher.dispatch(CounterAction.add(index % 3), mode: index.isMultiple(of: 2) ? .async : .serial)
            }
        }
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))

        let written = try lines(of: path)
        #expect(written.count == 2_000)
        let ids = try Set(written.map { try #require((try object($0)["id"] as? NSNumber)?.uint64Value) })
        #expect(ids.count == 2_000)
        #expect(log.writtenCount == 2_000)
    }

    @Test("replaying a log into a fresh dispatcher reproduces the final states")
    func replayReproducesTheStates() throws {
        let path = try temporaryLogPath()
        let original = try makeDispatcher()
        original.register(middleware: try ActionLogMiddleware(path: path, syncsToDisk: true))
        for index in 0..<300 {
            switch index % 4 {
            case 0: original.dispatch(CounterAction.add(index), mode: .serial)
            case 1: original.dispatch(CounterAction.increase, to: "totals", mode: .serial)
            case 2: original.dispatch(CounterAction.increase, mode: .sync)
            default: original.dispatch(CounterAction.add(-1), to: "counter", mode: .serial)
            }
        }
        #expect(original.waitUntilIdle(timeout: .seconds(120)))

        let fresh = try makeDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [CounterAction.self])

        #expect(report.replayed == 300)
        #expect(report.truncatedLine == nil)
        #expect(report.mismatchedLines.isEmpty)
        #expect(counts(fresh) == counts(original))
        #expect(counts(fresh) != [0, 0])
    }

    @Test("a truncated last line is reported and skipped")
    func truncatedLastLine() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        dispatcher.register(middleware: try ActionLogMiddleware(path: path))
        dispatcher.dispatch(CounterAction.add(2), mode: .sync)
        dispatcher.dispatch(CounterAction.add(3), mode: .sync)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"id":99,"time":"2026-11-21T10:00:00.000Z","mode":"sync","stor"#.utf8))
        handle.closeFile()

        let fresh = try makeDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [CounterAction.self])

        #expect(report.replayed == 2)
        #expect(report.truncatedLine == 3)
        #expect(report.description.contains("truncated line 3"))
        #expect(counts(fresh) == [5, 5])
    }

    @Test("a malformed line elsewhere is an error naming its line; the lines before it were replayed")
    func malformedLine() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        dispatcher.register(middleware: try ActionLogMiddleware(path: path))
        dispatcher.dispatch(CounterAction.add(2), mode: .sync)
        var text = try String(contentsOfFile: path, encoding: .utf8)
        text += "{\"id\": 7, \"oops\n"
        text += try lines(of: path)[0] + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)

        let fresh = try makeDispatcher()
        #expect {
            try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [CounterAction.self])
        } throws: { error in
            guard let error = error as? ActionLogError else { return false }
            return error.code == .malformedLine && error.line == 2 && error.message.contains("Line 2 of \(path)")
        }
        #expect(counts(fresh) == [2, 2])
    }

    @Test("a line whose payload does not decode is an error naming its line")
    func undecodablePayload() throws {
        let path = try temporaryLogPath()
        let type = ActionLog.typeName(of: CounterAction.self)
        let line =
            #"{"id":1,"time":"2026-11-21T10:00:00.000Z","mode":"sync","stores":["counter"],"type":"\#(type)","payload":{"multiply":{}}}"#
        try (line + "\n").write(toFile: path, atomically: true, encoding: .utf8)

        #expect {
            try ActionLog.read(contentsOf: path, actionTypes: [CounterAction.self])
        } throws: { error in
            (error as? ActionLogError)?.code == .malformedLine && (error as? ActionLogError)?.line == 1
        }
    }

    @Test("an action type not passed to the reader is an error naming its line and the type")
    func unknownActionType() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        dispatcher.register(middleware: try ActionLogMiddleware(path: path))
        dispatcher.dispatch(CounterAction.increase, mode: .sync)

        #expect {
            try ActionLog.read(contentsOf: path, actionTypes: [])
        } throws: { error in
            guard let error = error as? ActionLogError else { return false }
            return error.code == .unknownActionType && error.line == 1 && error.message.contains("CounterAction")
        }
    }

    @Test("reading back gives the entries with their fields")
    func readBack() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        dispatcher.register(middleware: try ActionLogMiddleware(path: path))
        let transaction = dispatcher.dispatch(CounterAction.add(4), to: "counter", mode: .sync)

        let contents = try ActionLog.read(contentsOf: path, actionTypes: [CounterAction.self])

        let entry = try #require(contents.entries.first)
        #expect(contents.entries.count == 1)
        #expect(entry.line == 1)
        #expect(entry.id == transaction.id)
        #expect(entry.mode == .sync)
        #expect(entry.targetIdentifier == "counter")
        #expect(entry.storeIdentifiers == ["counter"])
        #expect(entry.action as? CounterAction == .add(4))
        #expect(abs(entry.time.timeIntervalSinceNow) < 60)
    }

    @Test("identifiers with quotes, control characters and non-ASCII text survive the round trip")
    func escapedIdentifiers() throws {
        let path = try temporaryLogPath()
        let identifier = "we\"ird\\ id\n\t\u{1} ✓"
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore(identifier))
        dispatcher.register(middleware: try ActionLogMiddleware(path: path))
        dispatcher.dispatch(CounterAction.add(1), to: identifier, mode: .sync)

        #expect(try lines(of: path).count == 1)
        let entry = try #require(try ActionLog.read(contentsOf: path, actionTypes: [CounterAction.self]).entries.first)
        #expect(entry.targetIdentifier == identifier)
        #expect(entry.storeIdentifiers == [identifier])
    }

    @Test("opening an unwritable path and reading a missing file are errors naming the path")
    func fileErrors() throws {
        let missing = "/nonexistent-\(UUID().uuidString)/actions.jsonl"
        #expect {
            try ActionLogMiddleware(path: missing)
        } throws: { error in
            (error as? ActionLogError)?.code == .unwritableFile && "\(error)".contains(missing)
        }
        #expect {
            try ActionLog.read(contentsOf: missing, actionTypes: [CounterAction.self])
        } throws: { error in
            (error as? ActionLogError)?.code == .unreadableFile && "\(error)".contains(missing)
        }
    }

    @Test("appending keeps earlier lines, appending: false starts over, and a closed log reports failures")
    func appendTruncateAndClose() throws {
        let path = try temporaryLogPath()
        let dispatcher = try makeDispatcher()
        let first = try ActionLogMiddleware(path: path)
        dispatcher.register(middleware: first)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.unregister(middleware: first)
        first.close()
        let second = try ActionLogMiddleware(path: path)
        dispatcher.register(middleware: second)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(try lines(of: path).count == 2)
        dispatcher.unregister(middleware: second)
        second.close()  // one writer at a time

        let errors = Shared<[ActionLogError]>([])
        let third = try ActionLogMiddleware(path: path, appending: false) { errors.append($0) }
        dispatcher.register(middleware: third)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(try lines(of: path).count == 1)
        third.close()
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(third.failureCount == 1)
        #expect(errors.current.first?.code == .unwritableFile)
        #expect(errors.current.first?.message.contains("closed") == true)
    }
}
