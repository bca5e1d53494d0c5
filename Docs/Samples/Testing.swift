// The samples of Docs/Testing.md: they are Swift Testing tests themselves.

import DispatchStore
import DispatchStoreTesting
import Foundation
import Testing

enum TestingSamples {
    // sample: domain
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
    }
    // end-sample

    final class TodoReducer: Reducer<TodoList, TodoAction> {
        override func reduce(_ action: TodoAction, into state: inout TodoList) {
            switch action {
            case .add(let title): state.items.append(Todo(title: title))
            case .toggle(let index): state.items[index].done.toggle()
            }
        }
    }

    /// Counts the list; waits for `todos`, so it reads the list after the action.
    final class StatsReducer: Reducer<Stats, TodoAction> {
        let todos: Store<TodoList, TodoAction>

        init(todos: Store<TodoList, TodoAction>) {
            self.todos = todos
        }

        override func reduce(_ action: TodoAction, into state: inout Stats) {
            state.total = todos.state.items.count
            state.done = todos.state.items.filter(\.done).count
        }
    }

    static func makeTodoStores() throws -> (Dispatcher, Store<TodoList, TodoAction>, Store<Stats, TodoAction>) {
        let dispatcher = Dispatcher()
        let todos = Store<TodoList, TodoAction>(identifier: "todos", reducer: TodoReducer())
        let stats = Store<Stats, TodoAction>(
            identifier: "stats",
            reducer: StatsReducer(todos: todos),
            waitsFor: ["todos"]
        )
        try dispatcher.register(store: todos)
        try dispatcher.register(store: stats)
        return (dispatcher, todos, stats)
    }

    // sample: search
    struct Search: StateType, Equatable {
        var query = ""
        var isSearching = false
        var results: [String] = []
    }

    enum SearchAction: ActionType, Equatable {
        case search(String)
        case found([String])
    }

    /// `.search` starts a request; its answer comes back as a `.found` action.
    final class SearchReducer: Reducer<Search, SearchAction> {
        let request: @Sendable (String) -> [String]
        weak var dispatcher: Dispatcher?

        init(request: @escaping @Sendable (String) -> [String]) {
            self.request = request
        }

        override func operation(
            for action: SearchAction,
            in store: Store<Search, SearchAction>
        ) -> ActionOperation<Search, SearchAction> {
            guard case .search(let query) = action else { return super.operation(for: action, in: store) }
            let request = request
            let dispatcher = dispatcher
            return ActionOperation(action: action, store: store) { [weak dispatcher] operation, _, store in
                store.updateState {
                    $0.query = query
                    $0.isSearching = true
                }
                operation.finish()
                // Made from a `.serial` transaction, a `.serial` dispatch starts once that one has ended.
                dispatcher?.dispatch(SearchAction.found(request(query)), mode: .serial)
            }
        }

        override func reduce(_ action: SearchAction, into state: inout Search) {
            if case .found(let results) = action {
                state.isSearching = false
                state.results = results
            }
        }
    }
    // end-sample

    /// An action no store handles.
    struct Refresh: ActionType {}

    // sample: middleware
    /// Refuses titles longer than 20 characters: the stores never see them.
    final class TitleLimit: Middleware, Sendable {
        func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
            if case .add(let title) = action as? TodoAction, title.count > 20 { transaction.cancel() }
        }

        func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
    }
    // end-sample

    struct Audit: StateType, Equatable {
        var lines: [String] = []
    }

    enum AuditAction: ActionType, Equatable {
        case record(String)
    }

    final class AuditReducer: Reducer<Audit, AuditAction> {
        override func reduce(_ action: AuditAction, into state: inout Audit) {
            if case .record(let line) = action { state.lines.append(line) }
        }
    }

    // sample: audit
    /// Records each finished list change in the `audit` store, with an action of its own.
    final class AuditTrail: Middleware, Sendable {
        func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

        func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

        func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
            guard let action = result.transaction.action as? TodoAction, result.succeeded else { return }
            dispatcher.dispatch(AuditAction.record("\(action)"), mode: .serial)
        }
    }
    // end-sample
}

extension TestingSamples {
    @Suite("Docs: testing stores")
    struct Tests {
        // sample: first-test
        @Test func addingATodoUpdatesTheStats() async throws {
            let (dispatcher, todos, stats) = try makeTodoStores()
            let tester = DispatcherTester(dispatcher)

            await tester.send(TodoAction.add("milk")) {
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
                $0.expect(stats) { $0.total = 1 }
            }
            await tester.send(TodoAction.toggle(0)) {
                $0.expect(todos) { $0.items[0].done = true }
                $0.expect(stats) { $0.done = 1 }
            }
            await tester.finish()
        }
        // end-sample

        @Test("the failing step reports what the guide shows")
        func failingStep() async throws {
            let (dispatcher, todos, stats) = try makeTodoStores()
            let tester = DispatcherTester(dispatcher)
            let messages = Messages()
            await withKnownIssue {
                // sample: failing-step
                await tester.send(TodoAction.add("milk")) {
                    $0.expect(todos) { $0.items = [Todo(title: "bread")] }
                }
                // end-sample
            } matching: { issue in
                messages.append(issue.comments.map(\.rawValue).joined())
                return true
            }
            #expect(
                messages.all == [
                    """
                    send(TodoAction.add("milk")): the state of store 'todos' differs from the expectation:
                      items[0].title: expected "bread", actual "milk"
                    """,
                    """
                    send(TodoAction.add("milk")): store 'stats' changed, but no expectation names it; \
                    expect the change with $0.expect(store) { ... }:
                      total: before 0, after 1
                    """,
                ]
            )
            _ = stats
            await tester.finish()
        }

        // sample: modes
        @Test(arguments: [DispatchMode.async, .serial, .sync, .mainThread])
        func countingInEveryMode(mode: DispatchMode) async throws {
            let dispatcher = Dispatcher()
            // Its operations finish later, on a global queue.
            let counter = Store<Counter, CounterAction>(
                identifier: "counter",
                reducer: GettingStarted.RemoteCounterReducer()
            )
            try dispatcher.register(store: counter)
            let tester = DispatcherTester(dispatcher)
            tester.timeout = .seconds(10)  // the longest a step may wait; 30 seconds by default

            await tester.send(CounterAction.add(2), mode: mode) {
                $0.expect(counter) { $0.count = 2 }
            }
            await tester.send(CounterAction.increase, to: "counter", mode: mode) {
                $0.expect(counter) { $0.count = 3 }
            }
            await tester.finish()
        }
        // end-sample

        // sample: receive
        @Test func searchingShowsTheResults() async throws {
            let dispatcher = Dispatcher()
            let reducer = SearchReducer { query in ["\(query) (whole)", "\(query) (oat)"] }
            reducer.dispatcher = dispatcher
            let search = Store<Search, SearchAction>(identifier: "search", reducer: reducer)
            try dispatcher.register(store: search)
            let tester = DispatcherTester(dispatcher)

            await tester.send(SearchAction.search("milk"), mode: .serial) {
                $0.expect(search) {
                    $0.query = "milk"
                    $0.isSearching = true
                }
            }
            await tester.receive(SearchAction.found(["milk (whole)", "milk (oat)"])) {
                $0.expect(search) {
                    $0.isSearching = false
                    $0.results = ["milk (whole)", "milk (oat)"]
                }
            }
            await tester.finish()
        }
        // end-sample

        // sample: outcomes
        @Test func longTitlesAreRefused() async throws {
            let (dispatcher, todos, stats) = try makeTodoStores()
            dispatcher.register(middleware: TitleLimit())
            let tester = DispatcherTester(dispatcher)

            await tester.send(TodoAction.add("a title much too long to show")) {
                $0.expectCancelled(todos)
                $0.expectCancelled(stats)
            }
            await tester.send(Refresh()) {
                $0.expectUnhandled()  // no store handles `Refresh`
            }
            await tester.finish()
        }
        // end-sample

        // sample: middleware-follow-up
        @Test func everyChangeIsAudited() async throws {
            let (dispatcher, todos, stats) = try makeTodoStores()
            let audit = Store<Audit, AuditAction>(identifier: "audit", reducer: AuditReducer())
            try dispatcher.register(store: audit)
            dispatcher.register(middleware: AuditTrail())
            let tester = DispatcherTester(dispatcher)

            await tester.send(TodoAction.add("milk"), mode: .serial) {
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
                $0.expect(stats) { $0.total = 1 }
            }
            await tester.receive(AuditAction.record("add(\"milk\")")) {
                $0.expect(audit) { $0.lines = ["add(\"milk\")"] }
            }
            await tester.finish()
        }
        // end-sample

        // sample: recorder
        @Test func undoRestoresEveryStore() async throws {
            let (dispatcher, todos, stats) = try makeTodoStores()
            let recorder = RecorderMiddleware(limit: 100)
            dispatcher.register(middleware: recorder)
            let tester = DispatcherTester(dispatcher)

            await tester.send(TodoAction.add("milk")) {
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
                $0.expect(stats) { $0.total = 1 }
            }
            recorder.previous()
            // A restore is no transaction: assert checks the states it left.
            tester.assert {
                $0.expect(todos) { $0.items = [] }
                $0.expect(stats) { $0.total = 0 }
            }
            await tester.finish()
        }
        // end-sample

        // sample: non-exhaustive
        @Test func theListAlone() async throws {
            let (dispatcher, todos, _) = try makeTodoStores()
            let tester = DispatcherTester(dispatcher, exhaustivity: .off)

            // `stats` changes too; with exhaustivity off, a step checks only the stores it names.
            await tester.send(TodoAction.add("milk")) {
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
            }
            await tester.finish()
        }
        // end-sample
    }
}

/// The messages of the issues a sample records.
private final class Messages: @unchecked Sendable {
    // @unchecked: `messages` is only touched while holding `lock`.
    private let lock = NSLock()
    private var messages: [String] = []

    func append(_ message: String) {
        lock.withLock { messages.append(message) }
    }

    var all: [String] {
        lock.withLock { messages }
    }
}
