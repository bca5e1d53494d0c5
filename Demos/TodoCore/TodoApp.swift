public import DispatchStore
import Foundation

/// The todo program's model: a dispatcher with the `todos` and `interface` stores, a recorder of
/// the list changes, and a persistence observer that saves the list after each change.
public final class TodoApp: Sendable {
    /// The stores' identifiers, named once for every place that needs them.
    enum StoreIdentifier {
        /// The list's store.
        static let todos = "todos"
        /// The interface's store, which waits for the list's.
        static let interface = "interface"
    }

    /// The dispatcher.
    public let dispatcher = Dispatcher()
    /// The `todos` store: the items.
    public let list: Store<TodoList, TodoAction>
    /// The `interface` store: selection, mode and message; it waits for `todos`.
    public let interface: Store<Interface, TodoAction>
    /// The history of list changes, for `p` and `n`.
    public let recorder: RecorderMiddleware
    private let persistence: Subscription?
    /// Writes the list after changes and keeps the last failure; `nil` without a file.
    private let saver: Saver?

    /// Creates the app.
    ///
    /// - Parameters:
    ///   - items: The items to start with (entry 0 of the history).
    ///   - storage: Where to save the list after each change; `nil` keeps it in memory.
    ///   - historyLimit: The most history entries to keep.
    ///   - onSaveStatusChange: Called with the failure when a save fails, and with `nil` when the
    ///     file holds the list again after a failure. It may run on any thread.
    /// - Throws: `DispatchError` if the stores cannot be registered (not expected).
    public init(
        items: [TodoItem] = [],
        storage: TodoStorage? = nil,
        historyLimit: Int = 500,
        onSaveStatusChange: @escaping @Sendable (TodoStorage.Failure?) -> Void = { _ in }
    ) throws {
        list = Store(
            identifier: StoreIdentifier.todos,
            reducer: TodoListReducer(),
            initialState: TodoList(items: items)
        )
        interface = Store(
            identifier: StoreIdentifier.interface,
            reducer: InterfaceReducer(list: list),
            waitsFor: [StoreIdentifier.todos],
            initialState: Interface(itemCount: items.count)
        )
        recorder = RecorderMiddleware(limit: historyLimit) { transaction in
            (transaction.action as? TodoAction)?.changesList == true
        }
        if let storage {
            let saver = Saver(storage: storage, saved: items, onStatusChange: onSaveStatusChange)
            self.saver = saver
            persistence = list.subscribe { state, _ in saver.save(state.items) }
        } else {
            saver = nil
            persistence = nil
        }
        try dispatcher.register(store: list)
        try dispatcher.register(store: interface)
        dispatcher.register(middleware: recorder)
    }

    /// Why the file does not hold the list now, or `nil` when it does (or there is no file).
    ///
    /// Set when a save fails; cleared when a later save, after the next change or from
    /// ``saveNow()``, succeeds, or when the list is back to what the file holds.
    public var saveFailure: TodoStorage.Failure? {
        saver?.failure
    }

    /// Saves the list now if the file does not hold it: the retry on quit.
    ///
    /// The result is returned, not passed to the save-status callback.
    ///
    /// - Returns: `nil` when the file holds the list (or there is no file); otherwise why it
    ///   still cannot be saved.
    @discardableResult
    public func saveNow() -> TodoStorage.Failure? {
        guard let saver else { return nil }
        saver.save(list.state.items, reporting: false)
        return saver.failure
    }

    /// Performs `action` synchronously: list changes reach both stores, then the interface shows
    /// what the change did; interface actions reach only the `interface` store.
    ///
    /// - Parameter action: The action.
    public func perform(_ action: TodoAction) {
        let change = describe(action)
        dispatch(action)
        if let change { dispatch(.showMessage(change)) }
    }

    /// Performs `actions` synchronously, in order, as one step of the history: one ``previous()``
    /// takes them all back, and one ``next()`` brings them back (several items pasted at once).
    ///
    /// - Parameter actions: The actions; list changes among them make one history entry.
    public func performAsOneStep(_ actions: [TodoAction]) {
        recorder.group { step in
            for action in actions {
                let change = describe(action)
                step.include(dispatch(action))
                if let change { dispatch(.showMessage(change)) }
            }
        }
    }

    /// The sentence about what list change `action` is about to do (``TodoList/change(describing:)``),
    /// or `nil` for an interface action or a change that changes nothing.
    private func describe(_ action: TodoAction) -> String? {
        action.changesList ? list.state.change(describing: action) : nil
    }

    @discardableResult
    private func dispatch(_ action: TodoAction) -> Transaction {
        dispatcher.dispatch(action, to: action.changesList ? nil : StoreIdentifier.interface, mode: .sync)
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
        let undone = stepDescription
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
        perform(.showMessage("Redid: \(stepDescription)"))
        return true
    }

    /// The change of the current history entry, `Added “c”`, or for a step of several changes
    /// `Added “c” and 2 more changes`: derived from the entry's action (the latest, for a step)
    /// and the list of the entry before it.
    private var stepDescription: String {
        let entries = recorder.entries
        let position = recorder.position
        guard entries.indices.contains(position - 1), let action = entries[position].action as? TodoAction,
            let before = entries[position - 1].state(of: StoreIdentifier.todos) as? TodoList
        else { return "" }
        let change = before.change(describing: action) ?? ""
        let count = entries[position].transactionCount
        guard count > 1 else { return change }
        return "\(change) and \(count - 1) more change\(count == 2 ? "" : "s")"
    }
}

/// Saves the list when it differs from what the file holds, and keeps the last failure.
private final class Saver: Sendable {
    /// What the file holds and why it does not hold the list; its lock is held while saving, so
    /// that two observers never write the file at once or out of order.
    private let state: Locked<(saved: [TodoItem], lastFailure: TodoStorage.Failure?)>
    /// The file.
    private let storage: TodoStorage
    /// Told about each failure, and about the first success after one.
    private let onStatusChange: @Sendable (TodoStorage.Failure?) -> Void

    /// Creates a saver for `storage`, which holds `saved` now.
    init(storage: TodoStorage, saved: [TodoItem], onStatusChange: @escaping @Sendable (TodoStorage.Failure?) -> Void) {
        self.storage = storage
        self.state = Locked((saved, nil))
        self.onStatusChange = onStatusChange
    }

    /// Why the file does not hold the list, if it does not.
    var failure: TodoStorage.Failure? {
        state.withLock { $0.lastFailure }
    }

    /// Writes `items` unless the file already holds them; reports a failure, and a recovery,
    /// when `reporting`.
    func save(_ items: [TodoItem], reporting: Bool = true) {
        let (before, failure) = state.withLock { state in
            let before = state.lastFailure
            if items != state.saved {
                do throws(TodoStorage.Failure) {
                    try storage.save(items)
                    state.saved = items
                    state.lastFailure = nil
                } catch {
                    state.lastFailure = error
                }
            } else {
                // Back to what the file holds (an undo after a failed save): nothing is lost.
                state.lastFailure = nil
            }
            return (before, state.lastFailure)
        }
        if reporting && (failure != nil || before != nil) { onStatusChange(failure) }
    }
}
