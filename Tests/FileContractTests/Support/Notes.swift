import DispatchStore
import Foundation
import TestSupport

/// A list of notes: a `Codable` state and action, so that logs and journals can keep them.
struct Notes: StateType, Codable, Equatable {
    var items: [String] = []
}

enum NoteAction: ActionType, Codable, Equatable {
    case add(String)
}

/// Appends each note; calls `onFirstNote` once, as it applies the first.
final class NotesReducer: Reducer<Notes, NoteAction> {
    private let onFirstNote: Shared<(@Sendable () -> Void)?>

    init(onFirstNote: (@Sendable () -> Void)? = nil) {
        self.onFirstNote = Shared(onFirstNote)
    }

    override func reduce(_ action: NoteAction, into state: inout Notes) {
        guard case .add(let text) = action else { return }
        state.items.append(text)
        onFirstNote.withLock { hook in
            defer { hook = nil }
            return hook
        }?()
    }
}

/// A dispatcher with one store of notes, named `notes`.
func notesDispatcher(onFirstNote: (@Sendable () -> Void)? = nil) throws -> Dispatcher {
    let dispatcher = Dispatcher()
    try dispatcher.register(
        store: Store<Notes, NoteAction>(identifier: "notes", reducer: NotesReducer(onFirstNote: onFirstNote))
    )
    return dispatcher
}
