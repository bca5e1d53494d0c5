import DispatchStore
import Foundation
import TestSupport
import Testing

// MARK: A todo list and its statistics: two stores, one action type

struct Todo: Equatable, Sendable {
    var title: String
    var done = false
}

struct TodoList: StateType, Equatable {
    var items: [Todo] = []
}

struct Stats: StateType, Equatable {
    var total = 0
    var done = 0
}

enum TodoAction: ActionType, Equatable {
    case add(String)
    case toggle(Int)
    case rename(Int, String)
}

final class TodoReducer: Reducer<TodoList, TodoAction> {
    override func reduce(_ action: TodoAction, into state: inout TodoList) {
        switch action {
        case .add(let title): state.items.append(Todo(title: title))
        case .toggle(let index): state.items[index].done.toggle()
        case .rename(let index, let title): state.items[index].title = title
        }
    }
}

/// Counts what the list reducer does; waits for the `todos` store.
final class StatsReducer: Reducer<Stats, TodoAction> {
    let todos: Store<TodoList, TodoAction>

    init(todos: Store<TodoList, TodoAction>) {
        self.todos = todos
    }

    override func reduce(_ action: TodoAction, into state: inout Stats) {
        // `todos` finished first (waitsFor), so its state is the one after this action.
        let items = todos.state.items
        state.total = items.count
        state.done = items.filter(\.done).count
    }
}

/// A dispatcher with the `todos` and `stats` stores.
struct TodoFixture {
    let dispatcher = Dispatcher()
    let todos = Store<TodoList, TodoAction>(identifier: "todos", reducer: TodoReducer())
    let stats: Store<Stats, TodoAction>

    init() throws {
        stats = Store(identifier: "stats", reducer: StatsReducer(todos: todos), waitsFor: ["todos"])
        try dispatcher.register(store: todos)
        try dispatcher.register(store: stats)
    }
}

// MARK: A counter with operations that finish later, fail or get cancelled

struct CounterFailure: Error, CustomStringConvertible {
    var description: String { "the counter refused" }
}

/// Finishes `.fail` with an error, everything else as `CounterReducer` does.
final class FailingCounterReducer: Reducer<Counter, CounterAction> {
    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { operation, action, store in
            store.updateState { state in
                switch action {
                case .increase: state.count += 1
                case .add(let amount): state.count += amount
                case .fail: state.count = -1
                }
            }
            if action == .fail {
                operation.finish(throwing: CounterFailure())
            } else {
                operation.finish()
            }
        }
    }
}

/// Operations that finish on another thread right away (after the dispatching call returned).
final class LaterCounterReducer: Reducer<Counter, CounterAction> {
    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { operation, action, store in
            DispatchQueue.global().async {
                store.updateState { state in
                    if case .add(let amount) = action { state.count += amount } else { state.count += 1 }
                }
                operation.finish()
            }
        }
    }
}

/// Cancels, in `willDispatch`, every transaction that reaches the store named `target`.
final class CancellingMiddleware: Middleware, Sendable {
    let target: String

    init(target: String) {
        self.target = target
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        if store.identifier == target { transaction.cancel() }
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
}

/// An action type no store handles.
struct Unhandled: ActionType, Equatable {}

// MARK: A loader whose operation dispatches a follow-up action when its response arrives

struct Loader: StateType, Equatable {
    var isLoading = false
    var items: [String] = []
}

enum LoaderAction: ActionType, Equatable {
    case load
    case loaded([String])
}

/// `.load` sets `isLoading`, finishes, and dispatches `.loaded` once `response` opens.
final class LoaderReducer: Reducer<Loader, LoaderAction> {
    let response: Gate
    let items: [String]
    weak var dispatcher: Dispatcher?

    init(response: Gate, items: [String]) {
        self.response = response
        self.items = items
    }

    override func operation(
        for action: LoaderAction,
        in store: Store<Loader, LoaderAction>
    ) -> ActionOperation<Loader, LoaderAction>? {
        guard action == .load else { return super.operation(for: action, in: store) }
        let response = response
        let items = items
        let dispatcher = dispatcher
        return ActionOperation(action: action, store: store) { operation, _, store in
            store.updateState { $0.isLoading = true }
            operation.finish()
            Thread.detachNewThread {
                response.wait()
                dispatcher?.dispatch(LoaderAction.loaded(items))
            }
        }
    }

    override func reduce(_ action: LoaderAction, into state: inout Loader) {
        if case .loaded(let items) = action {
            state.isLoading = false
            state.items = items
        }
    }
}

// MARK: Known issues

/// An issue the tester recorded: its text and its line.
struct RecordedIssue: Sendable, CustomStringConvertible {
    let text: String
    let line: Int?

    var description: String {
        "line \(line.map(String.init) ?? "?"): \(text)"
    }
}

/// Runs `body`, which must record issues, and returns them for the test to check.
///
/// The test checks their text and location; it fails when `body` records none.
func recordedIssues(
    isolation: isolated (any Actor)? = #isolation,
    _ body: () async -> Void
) async -> [RecordedIssue] {
    let issues = Shared<[RecordedIssue]>([])
    await withKnownIssue(isolation: isolation) {
        await body()
    } matching: { issue in
        let text = issue.comments.map(\.rawValue).joined(separator: "\n")
        issues.append(RecordedIssue(text: text, line: issue.sourceLocation?.line))
        return true
    }
    return issues.current
}

// MARK: The main queue

/// A key set on the main queue, to tell whether code runs on it (under `swift test` on Linux the
/// main queue's blocks run on a worker thread, where `Thread.isMainThread` is false).
private let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

/// Whether the caller runs on the main queue or the main thread.
var isOnMainQueue: Bool {
    DispatchQueue.getSpecific(key: mainQueueKey) == true || Thread.isMainThread
}

// MARK: An operation that dispatches `.sync` into another store before it finishes

struct Pongs: StateType, Equatable {
    var count = 0
}

enum PingAction: ActionType, Equatable {
    case ping
}

final class PongReducer: Reducer<Pongs, PingAction> {
    override func reduce(_ action: PingAction, into state: inout Pongs) {
        state.count += 1
    }
}

/// Counts, and pings the `pongs` store with a nested `.sync` dispatch before finishing.
final class PingingCounterReducer: Reducer<Counter, CounterAction> {
    weak var dispatcher: Dispatcher?

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let dispatcher = dispatcher
        return ActionOperation(action: action, store: store) { operation, _, store in
            store.updateState { $0.count += 1 }
            dispatcher?.dispatch(PingAction.ping, mode: .sync)
            operation.finish()
        }
    }
}
