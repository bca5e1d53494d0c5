public import DispatchStore

/// Applies list changes to the `todos` store.
public final class TodoListReducer: Reducer<TodoList, TodoAction> {
    /// Applies `action` to the list; interface actions change nothing.
    public override func reduce(_ action: TodoAction, into list: inout TodoList) {
        switch action {
        case .add(let title):
            list.items.append(TodoItem(id: list.nextID, title: title))
            list.nextID += 1
            list.lastChange = "Added “\(title)”"
        case .edit(let id, let title):
            guard let index = list.items.firstIndex(where: { $0.id == id }) else { return }
            list.lastChange = "Renamed “\(list.items[index].title)” to “\(title)”"
            list.items[index].title = title
        case .toggle(let id):
            guard let index = list.items.firstIndex(where: { $0.id == id }) else { return }
            list.items[index].isDone.toggle()
            let item = list.items[index]
            list.lastChange = item.isDone ? "Done: “\(item.title)”" : "Not done: “\(item.title)”"
        case .delete(let id):
            guard let index = list.items.firstIndex(where: { $0.id == id }) else { return }
            list.lastChange = "Deleted “\(list.items.remove(at: index).title)”"
        case .clearDone:
            let before = list.items.count
            list.items.removeAll(where: \.isDone)
            let removed = before - list.items.count
            list.lastChange = "Cleared \(removed) done item\(removed == 1 ? "" : "s")"
        case .moveCursor, .setMode, .showMessage:
            break
        }
    }
}

/// Keeps the `interface` store in step: it waits for the `todos` store and reads its new state.
public final class InterfaceReducer: Reducer<Interface, TodoAction> {
    private let list: Store<TodoList, TodoAction>

    /// Creates the reducer; `list` is the store the interface waits for.
    public init(list: Store<TodoList, TodoAction>) {
        self.list = list
    }

    /// Moves the selection and sets the mode and message for `action`.
    public override func reduce(_ action: TodoAction, into interface: inout Interface) {
        // Reading the list is safe here: this store waits for it, so its change is committed.
        let list = self.list.state
        switch action {
        case .add:
            interface.cursor = list.items.count - 1
            interface.mode = .browsing
            interface.message = list.lastChange
        case .edit, .toggle, .delete, .clearDone:
            interface.mode = .browsing
            interface.message = list.lastChange
        case .moveCursor(let delta):
            interface.cursor += delta
        case .setMode(let mode):
            interface.mode = mode
            interface.message = ""
        case .showMessage(let message):
            interface.message = message
        }
        interface.cursor = max(0, min(interface.cursor, list.items.count - 1))
    }
}
