import DispatchStore
import DispatchStoreTesting
import Foundation
import TestSupport
import Testing

@Suite("DispatcherTester: passing steps")
struct DispatcherTesterTests {
    @Test("the issue's example: one action, two stores, every change expected")
    func example() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        let result = await tester.send(TodoAction.add("milk")) {
            $0.expect(todos) { $0.items = [Todo(title: "milk")] }
            $0.expect(stats) { $0.total = 1 }
        }
        #expect(result?.handledStores == ["todos", "stats"])
        await tester.send(TodoAction.toggle(0)) {
            $0.expect(todos) { $0.items[0].done = true }
            $0.expect(stats) { $0.done = 1 }
        }
        await tester.finish()
        #expect(todos.state.items == [Todo(title: "milk", done: true)])
    }

    @Test(
        "every mode is waited for, through its completion",
        arguments: [DispatchMode.async, .serial, .sync, .mainThread]
    )
    func everyMode(mode: DispatchMode) async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let onMain = Shared<[Bool]>([])
        let subscription = todos.subscribe { _, _ in onMain.append(isOnMainQueue) }
        let tester = DispatcherTester(fixture.dispatcher)
        for index in 1...5 {
            let result = await tester.send(TodoAction.add("item \(index)"), mode: mode) {
                $0.expect(todos) { $0.items.append(Todo(title: "item \(index)")) }
                $0.expect(stats) { $0.total = index }
            }
            #expect(result?.succeeded == true)
            #expect(result?.transaction.mode == mode)
        }
        await tester.finish()
        #expect(onMain.current.count == 5)
        if mode == .mainThread { #expect(onMain.current.allSatisfy { $0 }) }
        _ = subscription
    }

    @Test(".mainThread from a @MainActor test runs inline on the main queue and is checked the same way")
    @MainActor
    func mainThreadFromMainActor() async throws {
        let fixture = try TodoFixture()
        let todos = fixture.todos
        let onMain = Shared<[Bool]>([])
        let subscription = todos.subscribe { _, _ in
            onMain.append(isOnMainQueue)
        }
        let tester = DispatcherTester(fixture.dispatcher, exhaustivity: .off)
        await tester.send(TodoAction.add("milk"), mode: .mainThread) {
            $0.expect(todos) { $0.items = [Todo(title: "milk")] }
        }
        await tester.send(TodoAction.add("bread"), mode: .async) {
            $0.expect(todos) { $0.items.append(Todo(title: "bread")) }
        }
        await tester.finish()
        #expect(onMain.current.first == true)
        _ = subscription
    }

    @Test(
        "operations finishing later on other threads are waited for",
        arguments: [DispatchMode.async, .serial, .sync]
    )
    func operationsFinishingLater(mode: DispatchMode) async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let gated = Store<Counter, CounterAction>(
            identifier: "gated",
            reducer: GatedCounterReducer(gate: gate, started: started)
        )
        let later = Store<Counter, CounterAction>(identifier: "later", reducer: LaterCounterReducer())
        try dispatcher.register(store: gated)
        try dispatcher.register(store: later)
        // The step waits for a gated operation: as long as a gate may take under load.
        let tester = DispatcherTester(dispatcher, timeout: .seconds(600))
        // The gate opens only once the operation has started, on another thread: the step cannot
        // have compared the states before that.
        onNewThread {
            started.wait()
            gate.open()
        }
        await tester.send(CounterAction.add(5), mode: mode) {
            $0.expect(gated) { $0.count = 5 }
            $0.expect(later) { $0.count = 5 }
        }
        await tester.finish()
    }

    @Test("a waitsFor chain whose first store finishes later is waited for as a whole")
    func waitsForChain() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let first = Store<Counter, CounterAction>(identifier: "first", reducer: GatedCounterReducer(gate: gate))
        let second = Store<Counter, CounterAction>(
            identifier: "second",
            reducer: LaterCounterReducer(),
            waitsFor: ["first"]
        )
        let third = Store<Counter, CounterAction>(
            identifier: "third",
            reducer: InlineCounterReducer(),
            waitsFor: ["second"]
        )
        for store in [third, second, first] {
            try dispatcher.register(store: store)
        }
        let tester = DispatcherTester(dispatcher)
        onNewThread { gate.open() }
        let result = await tester.send(CounterAction.increase) {
            $0.expect(first) { $0.count = 1 }
            $0.expect(second) { $0.count = 1 }
            $0.expect(third) { $0.count = 1 }
        }
        #expect(result?.handledStores == ["first", "second", "third"])
        await tester.finish()
    }

    @Test("send(_:to:) reaches one store; the others must not change")
    func toOneStore() async throws {
        let dispatcher = Dispatcher()
        let left = Store<Counter, CounterAction>(identifier: "left", reducer: InlineCounterReducer())
        let right = Store<Counter, CounterAction>(identifier: "right", reducer: InlineCounterReducer())
        try dispatcher.register(store: left)
        try dispatcher.register(store: right)
        let tester = DispatcherTester(dispatcher)
        let result = await tester.send(CounterAction.add(3), to: "right", mode: .serial) {
            $0.expect(right) { $0.count = 3 }
        }
        #expect(result?.handledStores == ["right"])
        await tester.finish()
        #expect(left.state.count == 0)
    }

    @Test("receive(_:) checks an action an operation dispatched later, against the states it finished with")
    func receiveFollowUp() async throws {
        let dispatcher = Dispatcher()
        let response = Gate()
        let reducer = LoaderReducer(response: response, items: ["milk", "bread"])
        reducer.dispatcher = dispatcher
        let loader = Store<Loader, LoaderAction>(identifier: "loader", reducer: reducer)
        try dispatcher.register(store: loader)
        let tester = DispatcherTester(dispatcher)
        await tester.send(LoaderAction.load) {
            $0.expect(loader) { $0.isLoading = true }
        }
        response.open()
        let result = await tester.receive(LoaderAction.loaded(["milk", "bread"])) {
            $0.expect(loader) {
                $0.isLoading = false
                $0.items = ["milk", "bread"]
            }
        }
        #expect(result?.handledStores == ["loader"])
        await tester.finish()
    }

    @Test("with exhaustivity off, only the stores a step names are checked, and receive skips other actions")
    func nonExhaustive() async throws {
        let fixture = try TodoFixture()
        let todos = fixture.todos
        let tester = DispatcherTester(fixture.dispatcher, exhaustivity: .off)
        // `stats` changes too, and is not named.
        await tester.send(TodoAction.add("milk")) {
            $0.expect(todos) { $0.items = [Todo(title: "milk")] }
        }
        // Changes between steps and actions dispatched elsewhere are skipped...
        fixture.stats.updateState { $0.total = 99 }
        fixture.dispatcher.dispatch(TodoAction.add("tea"), mode: .sync)
        fixture.dispatcher.dispatch(TodoAction.add("jam"), mode: .sync)
        // ...and receive waits for the one it names.
        await tester.receive(TodoAction.add("jam")) {
            $0.expect(todos) { $0.items.append(Todo(title: "jam")) }
        }
        tester.exhaustivity = .on
        #expect(tester.exhaustivity == .on)
        await tester.finish()
    }

    @Test("failures, cancellations and unhandled actions pass when expected")
    func expectedOutcomes() async throws {
        let dispatcher = Dispatcher()
        let failing = Store<Counter, CounterAction>(identifier: "failing", reducer: FailingCounterReducer())
        let cancelled = Store<Counter, CounterAction>(identifier: "cancelled", reducer: InlineCounterReducer())
        try dispatcher.register(store: failing)
        try dispatcher.register(store: cancelled)
        dispatcher.register(middleware: CancellingMiddleware(target: "cancelled"))
        let tester = DispatcherTester(dispatcher)
        let result = await tester.send(CounterAction.fail) {
            $0.expectFailure(of: failing)
            $0.expect(failing) { $0.count = -1 }
            $0.expectCancelled(cancelled)
        }
        #expect(result?.failures.map(\.storeIdentifier) == ["failing"])
        #expect(result?.cancelledStores == ["cancelled"])
        let unhandled = await tester.send(Unhandled()) {
            $0.expectUnhandled()
        }
        #expect(unhandled?.isUnhandled == true)
        await tester.send(CounterAction.add(1), to: "nobody") {
            $0.expectUnhandled()
        }
        await tester.finish()
    }

    @Test("states that are not Equatable are compared field by field")
    func nonEquatableState() async throws {
        struct Notes: StateType {
            var lines: [String] = []
            var tags: Set<String> = []
        }
        enum NotesAction: ActionType {
            case write(String)
        }
        final class NotesReducer: Reducer<Notes, NotesAction> {
            override func reduce(_ action: NotesAction, into state: inout Notes) {
                if case .write(let line) = action {
                    state.lines.append(line)
                    state.tags.insert("edited")
                }
            }
        }
        let dispatcher = Dispatcher()
        let notes = Store<Notes, NotesAction>(identifier: "notes", reducer: NotesReducer())
        try dispatcher.register(store: notes)
        let tester = DispatcherTester(dispatcher)
        await tester.send(NotesAction.write("hello")) {
            $0.expect(notes) {
                $0.lines = ["hello"]
                $0.tags = ["edited"]
            }
        }
        await tester.finish()
    }

    @Test("assert(_:) checks changes made without the tester: a recorder move, a dispatch of the test's own")
    func assertChanges() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let recorder = RecorderMiddleware(limit: 10)
        fixture.dispatcher.register(middleware: recorder)
        let tester = DispatcherTester(fixture.dispatcher)
        await tester.send(TodoAction.add("milk")) {
            $0.expect(todos) { $0.items = [Todo(title: "milk")] }
            $0.expect(stats) { $0.total = 1 }
        }
        #expect(recorder.previous())
        tester.assert {
            $0.expect(todos) { $0.items = [] }
            $0.expect(stats) { $0.total = 0 }
        }
        // A transaction of the test's own, checked by its states: nothing left to receive.
        fixture.dispatcher.dispatch(TodoAction.add("tea"), mode: .sync)
        tester.assert {
            $0.expect(todos) { $0.items = [Todo(title: "tea")] }
            $0.expect(stats) { $0.total = 1 }
        }
        await tester.send(TodoAction.toggle(0)) {
            $0.expect(todos) { $0.items[0].done = true }
            $0.expect(stats) { $0.done = 1 }
        }
        await tester.finish()
    }

    @Test("finish() waits for what is in flight instead of reporting it at once")
    func finishWaits() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let gated = Store<Counter, CounterAction>(
            identifier: "gated",
            reducer: GatedCounterReducer(gate: gate, started: started)
        )
        try dispatcher.register(store: gated)
        // The step waits for a gated operation: as long as a gate may take under load.
        let tester = DispatcherTester(dispatcher, exhaustivity: .off, timeout: .seconds(600))
        dispatcher.dispatch(CounterAction.add(2), mode: .serial)
        #expect(await started.wait())
        // Opened from another thread while finish() waits (or before it starts): either way no issue.
        onNewThread { gate.open() }
        await tester.finish()
        #expect(gated.state.count == 2)
    }

    @Test("the tester's middleware is registered while it runs and removed by finish()")
    func middlewareLifetime() async throws {
        let fixture = try TodoFixture()
        let tester = DispatcherTester(fixture.dispatcher)
        #expect(fixture.dispatcher.middleware.count == 1)
        await tester.finish()
        #expect(fixture.dispatcher.middleware.isEmpty)
        do {
            let unfinished = DispatcherTester(fixture.dispatcher)
            #expect(fixture.dispatcher.middleware.count == 1)
            withExtendedLifetime(unfinished) {}
        }
        // Released without finish(): unregistered too.
        #expect(fixture.dispatcher.middleware.isEmpty)
    }

    @Test("steps from a stress of modes keep every store exact")
    func manySteps() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        let modes: [DispatchMode] = [.async, .serial, .sync, .mainThread]
        for index in 0..<200 {
            await tester.send(TodoAction.add("\(index)"), mode: modes[index % modes.count]) {
                $0.expect(todos) { $0.items.append(Todo(title: "\(index)")) }
                $0.expect(stats) { $0.total += 1 }
            }
        }
        await tester.finish()
        #expect(todos.state.items.count == 200)
    }
}
