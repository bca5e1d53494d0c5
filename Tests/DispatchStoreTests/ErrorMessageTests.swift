import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

/// Every error a person reads is a sentence naming what is involved; the code is for code.
@Suite("Error messages")
struct ErrorMessageTests {
    /// The codes' names, none of which may start a description.
    static let codeNames = [
        "duplicateIdentifier", "dependencyCycle", "storeRegisteredElsewhere", "unknownStore",
        "actionTypeMismatch", "unhandledAction", "reentrantDispatch", "operationReused", "timedOut", "shutDown",
        "historyPositionOutOfRange", "recorderDetached", "reentrantRestore", "unwritableFile", "unreadableFile",
        "malformedLine", "unknownActionType", "unencodableAction",
    ]

    /// Checks that `description` is `message`, a sentence (a capital first letter, a final period)
    /// that names `names` and does not start with a code name, and that `String(reflecting:)` shows
    /// `code` as well.
    func expectSentence(
        _ error: any Error & CustomStringConvertible,
        message: String,
        code: String,
        naming names: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let description = "\(error)"
        #expect(description == message, sourceLocation: sourceLocation)
        #expect(description.first?.isUppercase == true, "\(description)", sourceLocation: sourceLocation)
        #expect(description.hasSuffix("."), "\(description)", sourceLocation: sourceLocation)
        #expect(
            !Self.codeNames.contains { description.hasPrefix($0) },
            "\(description)",
            sourceLocation: sourceLocation
        )
        for name in names {
            #expect(description.contains(name), "\(description) does not name \(name)", sourceLocation: sourceLocation)
        }
        #expect(String(reflecting: error).contains(code), sourceLocation: sourceLocation)
    }

    @Test("registration errors name the store, or the cycle")
    func registration() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("counter"))
        let duplicate = #expect(throws: DispatchError.self) {
            try dispatcher.register(store: makeCounterStore("counter"))
        }
        let error = try #require(duplicate)
        #expect(error.code == .duplicateIdentifier)
        expectSentence(error, message: error.message, code: "duplicateIdentifier", naming: ["'counter'"])

        try dispatcher.register(store: makeCounterStore("a", waitsFor: ["b"]))
        let cycle = try #require(
            #expect(throws: DispatchError.self) {
                try dispatcher.register(store: makeCounterStore("b", waitsFor: ["a"]))
            }
        )
        #expect(cycle.code == .dependencyCycle)
        #expect(cycle.cycle == ["b", "a", "b"])
        expectSentence(cycle, message: cycle.message, code: "dependencyCycle", naming: ["'b'", "b -> a -> b"])
    }

    @Test("dispatch errors name the store or the action")
    func dispatching() async throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("counter"))

        let unknown = try #require(await dispatcher.perform(CounterAction.increase, to: "missing").error)
        #expect(unknown.code == .unknownStore)
        expectSentence(unknown, message: unknown.message, code: "unknownStore", naming: ["'missing'", "increase"])

        struct Unhandled: ActionType {}
        let unhandled = try #require(await dispatcher.perform(Unhandled()).error)
        #expect(unhandled.code == .unhandledAction)
        expectSentence(unhandled, message: unhandled.message, code: "unhandledAction", naming: ["Unhandled"])

        _ = await dispatcher.shutdown()
        let late = try #require(await dispatcher.perform(CounterAction.add(3)).error)
        #expect(late.code == .shutDown)
        expectSentence(late, message: late.message, code: "shutDown", naming: ["add(3)"])
    }

    @Test("the recorder's errors name the position and the range, or say what to do")
    func recorder() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore())
        let recorder = RecorderMiddleware(limit: 10)
        dispatcher.register(middleware: recorder)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)

        let outOfRange = try #require(#expect(throws: DispatchError.self) { try recorder.jump(to: 5) })
        #expect(outOfRange.code == .historyPositionOutOfRange)
        expectSentence(
            outOfRange,
            message: outOfRange.message,
            code: "historyPositionOutOfRange",
            naming: ["position 5", "0 through 1"]
        )

        dispatcher.unregister(middleware: recorder)
        let detached = try #require(#expect(throws: DispatchError.self) { try recorder.jump(to: 0) })
        #expect(detached.code == .recorderDetached)
        expectSentence(detached, message: detached.message, code: "recorderDetached", naming: ["register(middleware:)"])
    }

    @Test("action log errors name the file and the line")
    func actionLog() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let missing = directory.file("missing/actions.jsonl").path
        let unwritable = try #require(
            #expect(throws: ActionLogError.self) { try ActionLogMiddleware(path: missing) }
        )
        #expect(unwritable.code == .unwritableFile && unwritable.path == missing)
        expectSentence(unwritable, message: unwritable.message, code: "unwritableFile", naming: [missing])

        let unreadable = try #require(
            #expect(throws: ActionLogError.self) {
                try ActionLog.read(contentsOf: missing, actionTypes: [CounterAction.self])
            }
        )
        #expect(unreadable.code == .unreadableFile)
        expectSentence(unreadable, message: unreadable.message, code: "unreadableFile", naming: [missing])
        #expect(!unreadable.message.contains(".."))

        let damaged = directory.file("damaged.jsonl").path
        try "not json\n{}\n".write(toFile: damaged, atomically: true, encoding: .utf8)
        let malformed = try #require(
            #expect(throws: ActionLogError.self) {
                try ActionLog.read(contentsOf: damaged, actionTypes: [CounterAction.self])
            }
        )
        #expect(malformed.code == .malformedLine && malformed.line == 1)
        expectSentence(malformed, message: malformed.message, code: "malformedLine", naming: ["Line 1 of \(damaged)"])
    }
}
