public import DispatchStore
import Foundation

/// The todo program's model: a dispatcher with the `todos` and `interface` stores, a recorder of
/// the list changes, and a persistence observer that saves the list after each change.
public final class TodoApp: Sendable {
    /// The dispatcher.
    public let dispatcher = Dispatcher()
    /// The `todos` store: the items.
    public let list: Store<TodoList, TodoAction>
    /// The `interface` store: selection, mode and message; it waits for `todos`.
    public let interface: Store<Interface, TodoAction>
    /// The history of list changes, for `p` and `n`.
    public let recorder: RecorderMiddleware
    private let persistence: Subscription?

    /// Creates the app.
    ///
    /// - Parameters:
    ///   - items: The items to start with (entry 0 of the history).
    ///   - storage: Where to save the list after each change; `nil` keeps it in memory.
    ///   - historyLimit: The most history entries to keep.
    ///   - onSaveError: Called when saving fails.
    /// - Throws: `DispatchError` if the stores cannot be registered (not expected).
    public init(
        items: [TodoItem] = [],
        storage: TodoStorage? = nil,
        historyLimit: Int = 500,
        onSaveError: @escaping @Sendable (TodoStorage.Failure) -> Void = { _ in }
    ) throws {
        list = Store(identifier: "todos", reducer: TodoListReducer(), initialState: TodoList(items: items))
        interface = Store(identifier: "interface", reducer: InterfaceReducer(list: list), waitsFor: ["todos"])
        recorder = RecorderMiddleware(limit: historyLimit) { transaction in
            (transaction.action as? TodoAction)?.changesList == true
        }
        if let storage {
            let saved = SavedItems(items)
            persistence = list.subscribe { state, _ in
                guard saved.replace(with: state.items) else { return }
                do {
                    try storage.save(state.items)
                } catch let failure as TodoStorage.Failure {
                    onSaveError(failure)
                } catch {
                    onSaveError(TodoStorage.Failure(path: storage.url.path, reason: "\(error)"))
                }
            }
        } else {
            persistence = nil
        }
        try dispatcher.register(store: list)
        try dispatcher.register(store: interface)
        dispatcher.register(middleware: recorder)
    }

    /// Performs `action` synchronously: list changes reach both stores, interface actions only the
    /// `interface` store.
    ///
    /// - Parameter action: The action.
    public func perform(_ action: TodoAction) {
        dispatcher.dispatch(action, to: action.changesList ? nil : "interface", mode: .sync)
    }

    /// The selected item, if the list is not empty.
    public var selectedItem: TodoItem? {
        let items = list.state.items
        let cursor = interface.state.cursor
        return items.indices.contains(cursor) ? items[cursor] : nil
    }

    /// The position in the history as `(change, changes)`: 0 is the starting list.
    public var history: (position: Int, count: Int) {
        (recorder.position, recorder.count - 1)
    }

    /// `history N/M`, for the status line.
    public var historyLabel: String {
        "history \(history.position)/\(history.count)"
    }

    /// Goes back to the list before the last change.
    ///
    /// - Returns: `false` when there is nothing to go back to.
    @discardableResult
    public func previous() -> Bool {
        let undone = list.state.lastChange
        guard recorder.previous() else { return false }
        perform(.showMessage("Undid: \(undone)"))
        return true
    }

    /// Goes forward to the next recorded change.
    ///
    /// - Returns: `false` when there is nothing to go forward to.
    @discardableResult
    public func next() -> Bool {
        guard recorder.next() else { return false }
        perform(.showMessage("Redid: \(list.state.lastChange)"))
        return true
    }
}

/// The items last written to the file, to save only real changes.
private final class SavedItems: @unchecked Sendable {
    // @unchecked: `items` is only touched while holding `lock`.
    private let lock = NSLock()
    private var items: [TodoItem]

    init(_ items: [TodoItem]) {
        self.items = items
    }

    /// Records `newItems`; `false` when they equal the last ones.
    func replace(with newItems: [TodoItem]) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard newItems != items else { return false }
        items = newItems
        return true
    }
}
