// The samples of Docs/StoreDependencies.md.

import DispatchStore
import Testing

enum StoreDependencies {
    typealias Counter = GettingStarted.Counter
    typealias CounterAction = GettingStarted.CounterAction

    // sample: totals
    struct Totals: StateType {
        var actions = 0
        var lastCount = 0
    }

    /// Runs after the counter store's operation for the same action, and reads its new state.
    final class TotalsReducer: Reducer<Totals, CounterAction> {
        let counter: Store<Counter, CounterAction>

        init(counter: Store<Counter, CounterAction>) {
            self.counter = counter
        }

        override func reduce(_ action: CounterAction, into state: inout Totals) {
            state.actions += 1
            state.lastCount = counter.state.count
        }
    }
    // end-sample

    static func run() throws -> Totals {
        // sample: register
        let dispatcher = Dispatcher()
        let counter = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        let totals = Store<Totals, CounterAction>(
            identifier: "totals",
            reducer: TotalsReducer(counter: counter),
            waitsFor: ["counter"]
        )
        try dispatcher.register(store: totals)  // "counter" need not be registered yet
        try dispatcher.register(store: counter)

        dispatcher.dispatch(CounterAction.add(4))
        dispatcher.waitUntilIdle()
        print(totals.state.lastCount)  // 4: the counter's state after the same action
        // end-sample
        return totals.state
    }

    static func cycle() throws -> DispatchError? {
        let dispatcher = Dispatcher()
        var caught: DispatchError?
        // sample: cycle
        let a = Store<Counter, CounterAction>(
            identifier: "a",
            reducer: CounterReducer(),
            waitsFor: ["b"]
        )
        let b = Store<Counter, CounterAction>(
            identifier: "b",
            reducer: CounterReducer(),
            waitsFor: ["a"]
        )
        try dispatcher.register(store: a)
        do {
            try dispatcher.register(store: b)
        } catch let error as DispatchError where error.code == .dependencyCycle {
            print(error.cycle)  // ["b", "a", "b"]
            print(error)  // Store 'b' cannot be registered: its waitsFor closes the cycle b -> a -> b.
            caught = error  // hidden
        }
        // end-sample
        return caught
    }
}

@Suite("Docs: store dependencies")
struct StoreDependenciesSamples {
    @Test("the waiting store reads the state the other store committed for the same action")
    func totals() throws {
        let totals = try StoreDependencies.run()
        #expect(totals.actions == 1)
        #expect(totals.lastCount == 4)
    }

    @Test("a cycle is rejected, naming it")
    func cycle() throws {
        let error = try #require(try StoreDependencies.cycle())
        #expect(error.cycle == ["b", "a", "b"])
        #expect(
            error.description == "Store 'b' cannot be registered: its waitsFor closes the cycle b -> a -> b."
        )
    }
}
