import DispatchStore
import DispatchStoreTesting
import Foundation
import TestSupport
import Testing

/// Each failure the tester reports, proved with `withKnownIssue`: the issue's text and its line.
@Suite("DispatcherTester: reported issues")
struct DispatcherTesterIssueTests {
    // MARK: States

    @Test(
        "a state that differs from the expectation is one issue per store, naming it and each field, at the expectation"
    )
    func mismatch() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        await tester.send(TodoAction.add("milk")) {
            $0.expect(todos) { $0.items = [Todo(title: "milk")] }
            $0.expect(stats) { $0.total = 1 }
        }
        let line = #line
        let issues = await recordedIssues {
            await tester.send(TodoAction.rename(0, "oat milk")) {
                $0.expect(todos) { $0.items[0].title = "soy milk" }
                $0.expect(stats) { $0.total = 2 }
            }
        }
        #expect(
            issues.map(\.text) == [
                "send(TodoAction.rename(0, \"oat milk\")): the state of store 'todos' differs from the expectation:\n"
                    + "  items[0].title: expected \"soy milk\", actual \"oat milk\"",
                "send(TodoAction.rename(0, \"oat milk\")): the state of store 'stats' differs from the expectation "
                    + "(the store did not change):\n  total: expected 2, actual 1",
            ]
        )
        #expect(issues.map(\.line) == [line + 3, line + 4])
        await tester.finish()
    }

    @Test("a store that changed with no expectation is an issue at the step, with its fields before and after")
    func unexpectedChange() async throws {
        let fixture = try TodoFixture()
        let todos = fixture.todos
        let tester = DispatcherTester(fixture.dispatcher)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(TodoAction.add("milk")) {
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
            }
        }
        #expect(
            issues.map(\.text) == [
                "send(TodoAction.add(\"milk\")): store 'stats' changed, but no expectation names it; expect the change "
                    + "with $0.expect(store) { ... }:\n  total: before 0, after 1"
            ]
        )
        #expect(issues.map(\.line) == [line + 2])
        await tester.finish()
    }

    @Test("an expectation for a store that did not change is an issue")
    func expectationForUnchangedStore() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(TodoAction.add("milk"), to: "todos") {
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
                $0.expect(stats) { _ in }
            }
        }
        #expect(
            issues.map(\.text) == [
                "send(TodoAction.add(\"milk\"), to: \"todos\"): expected store 'stats' to change, but its state did not "
                    + "change; remove the expectation"
            ]
        )
        #expect(issues.map(\.line) == [line + 4])
        await tester.finish()
    }

    // MARK: Outcomes

    @Test("an unhandled action is an issue unless expected; expecting it when a store handles it is one too")
    func unhandled() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(Unhandled())
            await tester.send(TodoAction.add("milk")) {
                $0.expectUnhandled()
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
                $0.expect(stats) { $0.total = 1 }
            }
        }
        #expect(issues.count == 2)
        #expect(
            issues.first?.text.hasPrefix(
                "send(Unhandled()): no store handled the action; expect that with $0.expectUnhandled(). "
                    + "No registered store handles Unhandled"
            ) == true
        )
        #expect(
            issues.last?.text
                == "send(TodoAction.add(\"milk\")): expected no store to handle the action, but it reached 'todos', 'stats'"
        )
        #expect(issues.map(\.line) == [line + 2, line + 4])
        await tester.finish()
    }

    @Test("a failure is an issue unless expected; an expected failure that did not happen is one too")
    func failures() async throws {
        let dispatcher = Dispatcher()
        let failing = Store<Counter, CounterAction>(identifier: "failing", reducer: FailingCounterReducer())
        let other = Store<Counter, CounterAction>(identifier: "other", reducer: InlineCounterReducer())
        try dispatcher.register(store: failing)
        try dispatcher.register(store: other)
        let tester = DispatcherTester(dispatcher)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(CounterAction.fail, to: "failing") {
                $0.expect(failing) { $0.count = -1 }
            }
            await tester.send(CounterAction.increase, to: "failing") {
                $0.expectFailure(of: failing)
                $0.expectFailure(of: other)
                $0.expect(failing) { $0.count = 0 }
            }
        }
        #expect(
            issues.map(\.text) == [
                "send(CounterAction.fail, to: \"failing\"): the operation of store 'failing' failed: the counter refused; "
                    + "expect that with $0.expectFailure(of: store)",
                "send(CounterAction.increase, to: \"failing\"): expected the operation of store 'failing' to fail, but it "
                    + "succeeded",
                "send(CounterAction.increase, to: \"failing\"): expected the operation of store 'other' to fail, but the "
                    + "action did not reach it",
            ]
        )
        #expect(issues.map(\.line) == [line + 2, line + 6, line + 7])
        await tester.finish()
    }

    @Test("a cancellation is an issue unless expected; an expected cancellation that did not happen is one too")
    func cancellations() async throws {
        let dispatcher = Dispatcher()
        let counter = Store<Counter, CounterAction>(identifier: "counter", reducer: InlineCounterReducer())
        let cancelled = Store<Counter, CounterAction>(identifier: "cancelled", reducer: InlineCounterReducer())
        try dispatcher.register(store: counter)
        try dispatcher.register(store: cancelled)
        dispatcher.register(middleware: CancellingMiddleware(target: "cancelled"))
        let tester = DispatcherTester(dispatcher)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(CounterAction.increase) {
                $0.expect(counter) { $0.count = 1 }
                $0.expectCancelled(counter)
            }
        }
        #expect(
            issues.map(\.text) == [
                "send(CounterAction.increase): expected the operation of store 'counter' to be cancelled, but it succeeded",
                "send(CounterAction.increase): the operation of store 'cancelled' was cancelled; expect that with "
                    + "$0.expectCancelled(store)",
            ]
        )
        #expect(issues.map(\.line) == [line + 4, line + 2])
        await tester.finish()
    }

    // MARK: Waiting

    @Test(
        "a transaction that does not finish within the limit is an issue naming the running store; finish() reports it"
    )
    func timeout() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let gated = Store<Counter, CounterAction>(identifier: "gated", reducer: GatedCounterReducer(gate: gate))
        try dispatcher.register(store: gated)
        let tester = DispatcherTester(dispatcher, timeout: .milliseconds(300))
        #expect(tester.timeout == .milliseconds(300))
        let line = #line
        let issues = await recordedIssues {
            let result = await tester.send(CounterAction.increase) {
                $0.expect(gated) { $0.count = 1 }
            }
            #expect(result == nil)
            await tester.finish()
        }
        #expect(issues.count == 2)
        let first = issues.first?.text ?? ""
        #expect(first.hasPrefix("send(CounterAction.increase) did not finish within 0.3 seconds; in flight: #"))
        #expect(first.contains(" CounterAction.increase -> [gated] (async), running in 'gated'."))
        #expect(first.hasSuffix("Make its operations finish, or raise the tester's timeout if they need longer"))
        let last = issues.last?.text ?? ""
        #expect(last.hasPrefix("finish(): transactions are still in flight after 0.3 seconds: #"))
        #expect(
            last.contains("running in 'gated'; from send(CounterAction.increase) at DispatcherTesterIssueTests.swift:")
        )
        #expect(issues.map(\.line) == [line + 2, line + 6])
        gate.open()
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
        #expect(gated.state.count == 1)
    }

    @Test("finish() reports a transaction dispatched elsewhere that is still in flight")
    func finishWithWorkInFlight() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let gated = Store<Counter, CounterAction>(
            identifier: "gated",
            reducer: GatedCounterReducer(gate: gate, started: started)
        )
        try dispatcher.register(store: gated)
        let tester = DispatcherTester(dispatcher)
        dispatcher.dispatch(CounterAction.add(2), mode: .serial)
        #expect(await started.wait())
        tester.timeout = .milliseconds(200)
        let issues = await recordedIssues {
            await tester.finish()
        }
        #expect(issues.count == 1)
        #expect(issues.first?.text.hasPrefix("finish(): transactions are still in flight after 0.2 seconds: #") == true)
        #expect(issues.first?.text.hasSuffix(" CounterAction.add(2) -> [gated] (serial), running in 'gated'") == true)
        gate.open()
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
    }

    // MARK: Between steps

    @Test(
        "a transaction dispatched elsewhere that finished and was not received is an issue at the next step and at finish()"
    )
    func unreceived() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        let line = #line
        let issues = await recordedIssues {
            fixture.dispatcher.dispatch(TodoAction.add("tea"), mode: .sync)
            await tester.send(TodoAction.add("milk")) {
                $0.expect(todos) { $0.items.append(Todo(title: "milk")) }
                $0.expect(stats) { $0.total = 2 }
            }
            fixture.dispatcher.dispatch(TodoAction.toggle(0), mode: .sync)
            fixture.dispatcher.dispatch(TodoAction.toggle(1), mode: .sync)
            await tester.finish()
        }
        #expect(issues.count == 2)
        let first = issues.first?.text ?? ""
        #expect(
            first.hasPrefix("send(TodoAction.add(\"milk\")): 1 transaction dispatched outside the tester finished ")
        )
        #expect(first.contains("was not received: TodoAction.add(\"tea\") (#"))
        #expect(
            first.hasSuffix(
                ", todos succeeded, stats succeeded). Assert each with receive(_:) before this step, "
                    + "or set exhaustivity to .off"
            )
        )
        let last = issues.last?.text ?? ""
        #expect(
            last.hasPrefix("finish(): 2 transactions dispatched outside the tester finished and were not received: ")
        )
        #expect(last.contains("TodoAction.toggle(0) (#") && last.contains("; TodoAction.toggle(1) (#"))
        #expect(issues.map(\.line) == [line + 3, line + 9])
    }

    @Test("a store changed between steps outside any transaction is an issue with its fields")
    func changedBetweenSteps() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        let line = #line
        let issues = await recordedIssues {
            todos.updateState { $0.items.append(Todo(title: "sneaked in")) }
            await tester.send(TodoAction.add("milk")) {
                $0.expect(todos) { $0.items.append(Todo(title: "milk")) }
                $0.expect(stats) { $0.total = 2 }
            }
        }
        #expect(
            issues.map(\.text) == [
                "send(TodoAction.add(\"milk\")): store 'todos' changed since the last step without a transaction (an "
                    + "updateState outside any operation, or a recorder move):\n"
                    + "  items[0]: was (none), now Todo(title: \"sneaked in\", done: false)"
            ]
        )
        #expect(issues.map(\.line) == [line + 3])
        await tester.finish()
    }

    @Test("receive(_:) reports another action, nothing within the limit, and an expectation for changes a send checked")
    func receiveIssues() async throws {
        let dispatcher = Dispatcher()
        let reducer = PingingCounterReducer()
        reducer.dispatcher = dispatcher
        let counter = Store<Counter, CounterAction>(identifier: "counter", reducer: reducer)
        let pongs = Store<Pongs, PingAction>(identifier: "pongs", reducer: PongReducer())
        let todos = Store<TodoList, TodoAction>(identifier: "todos", reducer: TodoReducer())
        try dispatcher.register(store: counter)
        try dispatcher.register(store: pongs)
        try dispatcher.register(store: todos)
        // The steps that must pass keep the default limit: a loaded machine (the whole suite under
        // ThreadSanitizer on two cores) can take longer than a short one. Only the last receive,
        // which nothing can satisfy, runs with 0.2 seconds.
        let tester = DispatcherTester(dispatcher)
        // The nested ping finished while the send waited: its change belongs to the send's states.
        await tester.send(CounterAction.increase) {
            $0.expect(counter) { $0.count = 1 }
            $0.expect(pongs) { $0.count = 1 }
        }
        await tester.receive(PingAction.ping)

        await tester.send(CounterAction.increase) {
            $0.expect(counter) { $0.count = 2 }
            $0.expect(pongs) { $0.count = 2 }
        }
        let line = #line
        let issues = await recordedIssues {
            await tester.receive(PingAction.ping) {
                $0.expect(pongs) { $0.count = 2 }
            }
            dispatcher.dispatch(TodoAction.add("tea"), mode: .sync)
            await tester.receive(TodoAction.add("jam")) {
                $0.expect(todos) { $0.items = [Todo(title: "jam")] }
            }
            tester.timeout = .milliseconds(200)
            await tester.receive(TodoAction.add("jam"))
        }
        #expect(issues.count == 3)
        #expect(
            issues.first?.text
                == "receive(PingAction.ping): expected store 'pongs' to change, but it finished while "
                + "send(CounterAction.increase) was running, so that step already checked its changes; remove the "
                + "expectation"
        )
        let second = issues.dropFirst().first?.text ?? ""
        #expect(
            second.hasPrefix("receive(TodoAction.add(\"jam\")): the next transaction dispatched outside the tester ")
        )
        #expect(second.contains("was TodoAction.add(\"tea\") (#"))
        #expect(second.hasSuffix(", todos succeeded), not TodoAction.add(\"jam\")"))
        #expect(
            issues.last?.text
                == "receive(TodoAction.add(\"jam\")): no transaction dispatched outside the tester finished within "
                + "0.2 seconds"
        )
        #expect(issues.map(\.line) == [line + 3, line + 6, line + 10])
        await tester.finish()
    }

    @Test("assert(_:) reports differences, unexpected changes, and outcome expectations, which need a transaction")
    func assertIssues() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let tester = DispatcherTester(fixture.dispatcher)
        todos.updateState { $0.items = [Todo(title: "x")] }
        stats.updateState { $0.total = 5 }
        let line = #line
        let issues = await recordedIssues {
            tester.assert {
                $0.expect(todos) { $0.items = [Todo(title: "y")] }
                $0.expectFailure(of: stats)
                $0.expectUnhandled()
            }
        }
        #expect(
            issues.map(\.text) == [
                "assert(_:): expectUnhandled() needs a transaction; use it in send or receive, this step checks "
                    + "states only",
                "assert(_:): expectFailure(of:) for store 'stats' needs a transaction; use it in send or receive, this "
                    + "step checks states only",
                "assert(_:): the state of store 'todos' differs from the expectation:\n"
                    + "  items[0].title: expected \"y\", actual \"x\"",
                "assert(_:): store 'stats' changed, but no expectation names it; expect the change with "
                    + "$0.expect(store) { ... }:\n  total: before 0, after 5",
            ]
        )
        #expect(issues.map(\.line) == [line + 5, line + 4, line + 3, line + 2])
        await tester.finish()
    }

    // MARK: Misuse

    @Test("an expectation for a store the dispatcher does not know is an issue naming it; it is ignored")
    func unknownStore() async throws {
        let fixture = try TodoFixture()
        let (todos, stats) = (fixture.todos, fixture.stats)
        let ghost = Store<Counter, CounterAction>(identifier: "ghost", reducer: InlineCounterReducer())
        let twin = Store<TodoList, TodoAction>(identifier: "todos", reducer: TodoReducer())
        let tester = DispatcherTester(fixture.dispatcher)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(TodoAction.add("milk")) {
                $0.expect(todos) { $0.items = [Todo(title: "milk")] }
                $0.expect(stats) { $0.total = 1 }
                $0.expect(ghost) { $0.count = 1 }
                $0.expect(twin) { $0.items = [] }
                $0.expectFailure(of: ghost)
                $0.expectCancelled(ghost)
            }
        }
        let prefix = "send(TodoAction.add(\"milk\")): "
        #expect(
            issues.map(\.text) == [
                prefix
                    + "expect names store 'ghost', which is not registered with the tester's dispatcher (no store is "
                    + "registered under that identifier; registered: 'todos', 'stats'); the expectation is ignored",
                prefix
                    + "expect names store 'todos', which is not registered with the tester's dispatcher (another store "
                    + "is registered under that identifier; registered: 'todos', 'stats'); the expectation is ignored",
                prefix + "expectFailure(of:) names store 'ghost', which is not registered with the tester's dispatcher "
                    + "(no store is registered under that identifier; registered: 'todos', 'stats'); the expectation "
                    + "is ignored",
                prefix
                    + "expectCancelled(_:) names store 'ghost', which is not registered with the tester's dispatcher "
                    + "(no store is registered under that identifier; registered: 'todos', 'stats'); the expectation "
                    + "is ignored",
            ]
        )
        #expect(issues.map(\.line) == [line + 5, line + 6, line + 7, line + 8])
        await tester.finish()
    }

    @Test("steps after finish() and a second finish() are issues naming the call, and do nothing")
    func useAfterFinish() async throws {
        let fixture = try TodoFixture()
        let tester = DispatcherTester(fixture.dispatcher)
        await tester.finish()
        let line = #line
        let issues = await recordedIssues {
            let result = await tester.send(TodoAction.add("milk"))
            #expect(result == nil)
            await tester.receive(TodoAction.add("milk"))
            await tester.finish()
        }
        #expect(
            issues.map(\.text) == [
                "send(TodoAction.add(\"milk\")) was called after finish(); the tester no longer watches the dispatcher, "
                    + "so the step did nothing: create a new DispatcherTester for more steps",
                "receive(TodoAction.add(\"milk\")) was called after finish(); the tester no longer watches the "
                    + "dispatcher, so the step did nothing: create a new DispatcherTester for more steps",
                "finish() was called again; the tester already finished",
            ]
        )
        #expect(issues.map(\.line) == [line + 2, line + 4, line + 5])
        #expect(fixture.todos.state.items.isEmpty)
    }

    @Test("a step started while another one runs, from another task, is an issue naming both calls, and does nothing")
    func concurrentSends() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let gated = Store<Counter, CounterAction>(
            identifier: "gated",
            reducer: GatedCounterReducer(gate: gate, started: started)
        )
        try dispatcher.register(store: gated)
        // The step waits for a gated operation: as long as a gate may take under load.
        let tester = DispatcherTester(dispatcher, timeout: .seconds(600))
        let first = Task {
            await tester.send(CounterAction.increase) {
                $0.expect(gated) { $0.count = 1 }
            }
        }
        #expect(await started.wait())
        let line = #line
        let issues = await recordedIssues {
            let result = await tester.send(CounterAction.add(5)) {
                $0.expect(gated) { $0.count = 5 }
            }
            #expect(result == nil)
        }
        #expect(
            issues.map(\.text) == [
                "send(CounterAction.add(5)) was called while send(CounterAction.increase) is still running; the step did "
                    + "nothing. A tester checks one step at a time: await each step before starting the next"
            ]
        )
        #expect(issues.map(\.line) == [line + 2])
        gate.open()
        #expect(await first.value?.succeeded == true)
        await tester.finish()
        #expect(gated.state.count == 1)
    }

    @Test("expectations that throw are an issue of the step")
    func throwingExpectations() async throws {
        struct Refusal: Error {}
        let fixture = try TodoFixture()
        let todos = fixture.todos
        let tester = DispatcherTester(fixture.dispatcher, exhaustivity: .off)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(TodoAction.add("milk")) {
                try $0.expect(todos) { _ in throw Refusal() }
            }
        }
        #expect(issues.map(\.text) == ["send(TodoAction.add(\"milk\")): the expectations threw"])
        #expect(issues.map(\.line) == [line + 2])
        await tester.finish()
    }
}
