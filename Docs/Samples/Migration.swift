// The DispatchStore side of Docs/ComingFromReSwift.md, and the tests of all three sides.

import DispatchStore
import Testing

enum Migration {
    // sample: dispatchstore
    struct Counter: StateType {
        var count = 0

        enum Action: ActionType {
            case increase
            case add(amount: Int)
        }
    }

    final class CounterReducer: Reducer<Counter, Counter.Action> {
        override func reduce(_ action: Counter.Action, into state: inout Counter) {
            switch action {
            case .increase: state.count += 1
            case .add(let amount): state.count += amount
            }
        }
    }
    // end-sample

    final class CounterView {}

    static func run() throws -> Int {
        let view = CounterView()
        // sample: dispatchstore-use
        let dispatcher = Dispatcher()
        let store = Store<Counter, Counter.Action>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: store)
        store.register(observer: view) { state, _ in
            print("count:", state.count)
        }
        dispatcher.dispatch(Counter.Action.add(amount: 2), mode: .sync)
        dispatcher.dispatch(Counter.Action.increase, mode: .sync)  // count: 3
        // end-sample
        return store.state.count
    }
}

@Suite("Docs: coming from ReSwift or the original Dispatch")
struct MigrationSamples {
    @Test("the same counter in the three libraries ends at the same count")
    func sameCounter() throws {
        #expect(runReSwiftCounter() == 3)
        #expect(OriginalDispatchSide.run() == 3)
        #expect(try Migration.run() == 3)
    }
}
