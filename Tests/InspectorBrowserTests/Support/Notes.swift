// A small program for the browser tests: notes with a count and tags, and a store whose state is
// not Encodable, so that both ways of showing a state are rebuilt by the page.

import DispatchStore

enum NoteAction: ActionType, Codable, Equatable {
    case add(String)
    case tag(String, weight: Int)
    case untag(String)
    case clear
}

struct Notes: StateType, Codable {
    var items: [String] = []
    var tags: [String: Int] = [:]
    var seen: Set<String> = []
    var count = 0
}

struct Counts: StateType {
    var total = 0
    var last: String?
}

final class NotesReducer: Reducer<Notes, NoteAction> {
    override func reduce(_ action: NoteAction, into state: inout Notes) {
        state.count += 1
        switch action {
        case .add(let text):
            state.items.append(text)
            state.seen.insert(text)
        case .tag(let name, let weight):
            state.tags[name, default: 0] += weight
        case .untag(let name):
            state.tags[name] = nil
        case .clear:
            state.items.removeAll()
        }
    }
}

final class CountsReducer: Reducer<Counts, NoteAction> {
    override func reduce(_ action: NoteAction, into state: inout Counts) {
        state.total += 1
        if case .add(let text) = action { state.last = text }
    }
}

/// A dispatcher with the two stores.
struct NotesProgram {
    let dispatcher = Dispatcher()
    let notes = Store<Notes, NoteAction>(identifier: "notes", reducer: NotesReducer())
    let counts = Store<Counts, NoteAction>(identifier: "counts", reducer: CountsReducer(), waitsFor: ["notes"])

    init() throws {
        try dispatcher.register(store: notes)
        try dispatcher.register(store: counts)
    }
}
