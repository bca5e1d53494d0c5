import DispatchStore
import Foundation
import TestSupport
import Testing

/// A list of notes: a `Codable` state and action, so that logs and journals can keep them.
struct Notes: StateType, Codable, Equatable {
    var items: [String] = []
}

enum NoteAction: ActionType, Codable, Equatable {
    case add(String)
}

final class NotesReducer: Reducer<Notes, NoteAction> {
    override func reduce(_ action: NoteAction, into state: inout Notes) {
        guard case .add(let text) = action else { return }
        state.items.append(text)
    }
}

/// A dispatcher with one notes store.
func notesDispatcher() throws -> Dispatcher {
    let dispatcher = Dispatcher()
    try dispatcher.register(store: Store<Notes, NoteAction>(identifier: "notes", reducer: NotesReducer()))
    return dispatcher
}

/// How long a call may take before the watchdog calls it a hang.
let hangBound = 60.0

/// Runs `call` under the watchdog and returns what it threw, or `nil` when it returned.
///
/// - Throws: When `call` still ran after ``hangBound`` seconds.
func thrownError(_ name: String, _ call: @escaping @Sendable () throws -> Void) throws -> (any Error)? {
    let watched = runWatched(seconds: hangBound) { Result { try call() } }
    let outcome = try #require(watched, "\(name) still ran after \(hangBound) s")
    if case .failure(let error) = outcome.result { return error }
    return nil
}

@Suite("Bad files")
struct BadFileTests {
    @Test("a missing log: replaying and reading it throw at once, naming the path (replay used to wait forever)")
    func missingLog() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("no-such-file.jsonl").path
        let notes: [any (ActionType & Decodable).Type] = [NoteAction.self]
        let calls: [(String, @Sendable () throws -> Void)] = [
            ("replay", { try ActionLog.replay(contentsOf: path, into: notesDispatcher(), actionTypes: notes) }),
            ("forEachEntry", { try ActionLog.forEachEntry(in: path, actionTypes: notes) { _ in } }),
            ("read", { _ = try ActionLog.read(contentsOf: path, actionTypes: notes) }),
        ]
        for (name, call) in calls {
            let error = try #require(try thrownError(name, call) as? ActionLogError, "\(name)")
            #expect(error.code == .unreadableFile, "\(name)")
            #expect(error.message.contains(path) && error.message.contains("No such file or directory"), "\(name)")
        }
    }

    @Test("a records file that cannot be opened: the journal refuses at once, naming it (it used to wait forever)")
    func unopenableRecords() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Journal(directory: directory.url.path, dispatcher: notesDispatcher()).close()
        let records = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory.url.path).first { $0.hasPrefix("records-") }
        )
        let path = directory.file(records).path
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)

        let error = try #require(
            try thrownError("Journal") { _ = try Journal(directory: directory.url.path, dispatcher: notesDispatcher()) }
                as? JournalError
        )
        #expect(error.code == .unreadableFile)
        #expect(error.message.contains(path) && error.message.contains("directory"))
    }
}
