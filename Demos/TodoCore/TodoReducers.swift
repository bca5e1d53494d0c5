public import DispatchStore

/// Applies list changes to the `todos` store.
public final class TodoListReducer: Reducer<TodoList, TodoAction> {
    /// Applies `action` to the list; interface actions change nothing.
    public override func reduce(_ action: TodoAction, into list: inout TodoList) {
        switch action {
        case .add(let title):
            list.items.append(TodoItem(id: list.nextID, title: title))
            list.nextID += 1
        case .edit(let id, let title):
            guard let index = list.items.firstIndex(where: { $0.id == id }) else { return }
            list.items[index].title = title
        case .toggle(let id):
            guard let index = list.items.firstIndex(where: { $0.id == id }) else { return }
            list.items[index].isDone.toggle()
        case .delete(let id):
            guard let index = list.items.firstIndex(where: { $0.id == id }) else { return }
            list.items.remove(at: index)
        case .clearDone:
            list.items.removeAll(where: \.isDone)
        case .moveCursor, .setMode, .showMessage:
            break
        }
    }
}

/// Keeps the `interface` store in step with the list.
///
/// A list change reaches both stores, and the `interface` store waits for the `todos` store, so this
/// reducer reads the list's state once the change is committed: the new number of items. The
/// sentence about the change comes after, in a ``TodoAction/showMessage(_:)`` the app derives from
/// the action and the list before it. Interface actions reach the `interface` store only: the list
/// is not part of their transaction, so the reducer uses its own state (the number of items it last
/// saw) and never reads the list for them.
public final class InterfaceReducer: Reducer<Interface, TodoAction> {
    private let list: Store<TodoList, TodoAction>

    /// Creates the reducer; `list` is the store the interface waits for.
    public init(list: Store<TodoList, TodoAction>) {
        self.list = list
    }

    /// Moves the selection and sets the mode and message for `action`.
    public override func reduce(_ action: TodoAction, into interface: inout Interface) {
        switch action {
        case .add, .edit, .toggle, .delete, .clearDone:
            // This store waits for the list, and the action reached both: the list's change is committed.
            let list = self.list.state
            interface.itemCount = list.items.count
            if case .add = action { interface.cursor = list.items.count - 1 }
            interface.mode = .browsing
        case .moveCursor(let delta):
            interface.cursor += delta
        case .setMode(let mode):
            interface.mode = mode
            interface.message = ""
        case .showMessage(let message):
            interface.message = message
        }
        interface.cursor = max(0, min(interface.cursor, interface.itemCount - 1))
    }
}
