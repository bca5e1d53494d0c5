public import DispatchStore

/// One item of the list.
public struct TodoItem: Codable, Equatable, Sendable {
    /// A number that identifies the item for as long as it exists.
    public var id: Int
    /// What to do.
    public var title: String
    /// Whether it is done.
    public var isDone: Bool

    /// Creates an item.
    public init(id: Int, title: String, isDone: Bool = false) {
        self.id = id
        self.title = title
        self.isDone = isDone
    }

    private enum CodingKeys: String, CodingKey {
        case id
        case title
        case isDone = "done"
    }
}

/// The state of the `todos` store: the items.
///
/// It holds what the list is, not what happened to it: the sentence about a change is derived
/// from the action and the list before it (``change(describing:)``) by whoever shows it.
public struct TodoList: StateType, Equatable {
    /// The items, in the order they were added.
    public var items: [TodoItem] = []
    /// The id the next added item gets.
    public var nextID = 1

    /// Creates an empty list.
    public init() {}

    /// Creates a list holding `items`.
    public init(items: [TodoItem]) {
        self.items = items
        self.nextID = (items.map(\.id).max() ?? 0) + 1
    }
}

/// What the terminal interface is doing.
public enum Mode: Equatable, Sendable {
    /// Showing the list.
    case browsing
    /// Asking for the title of a new item.
    case adding
    /// Asking for a new title for the item with this id.
    case editing(id: Int)
    /// Showing the help.
    case help
}

/// The state of the `interface` store: the selection, the mode and the message line.
public struct Interface: StateType, Equatable {
    /// The index of the selected item.
    public var cursor = 0
    /// What the interface is doing.
    public var mode = Mode.browsing
    /// The message shown above the status line.
    public var message = ""
    /// How many items the list has: the cursor stays below it.
    ///
    /// Each list change sets it from the list's committed state; interface actions read it instead
    /// of the list.
    public var itemCount = 0

    /// Creates the interface state for an empty list.
    public init() {}

    /// Creates the interface state shown at start, for a list of `itemCount` items.
    public init(itemCount: Int) {
        self.itemCount = itemCount
    }
}

/// Everything the todo app can do.
///
/// List changes reach both stores; interface actions are dispatched to the `interface` store only,
/// so its reducer handles them from its own state.
public enum TodoAction: ActionType, Equatable {
    /// Adds an item at the end.
    case add(title: String)
    /// Renames an item.
    case edit(id: Int, title: String)
    /// Marks an item done, or not done.
    case toggle(id: Int)
    /// Removes an item.
    case delete(id: Int)
    /// Removes every done item.
    case clearDone
    /// Moves the selection by `by` items.
    case moveCursor(by: Int)
    /// Switches the interface's mode.
    case setMode(Mode)
    /// Shows a message.
    case showMessage(String)

    /// Whether the action changes the list (and so is recorded in the history).
    public var changesList: Bool {
        switch self {
        case .add, .edit, .toggle, .delete, .clearDone: true
        case .moveCursor, .setMode, .showMessage: false
        }
    }
}
