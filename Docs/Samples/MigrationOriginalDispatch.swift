// The original Dispatch side of Docs/ComingFromReSwift.md, compiled against a stand-in with its API.

import OriginalDispatchLookalike

enum OriginalDispatchSide {
    // sample: original
    struct Counter: StateType {
        let count: Int

        init() { count = 0 }
        init(count: Int) { self.count = count }

        func byAdding(value: Int) -> Counter {
            Counter(count: count + value)
        }

        enum Action: ActionType {
            case increase
            case add(amount: Int)
        }
    }

    class CounterReducer: Reducer<Counter, Counter.Action> {
        override func operation(
            for action: Counter.Action,
            in store: Store<Counter, Counter.Action>
        ) -> ActionOperation<Counter, Counter.Action> {
            switch action {
            case .increase:
                return ActionOperation(action: action, store: store) { operation, _, store in
                    store.updateState { state in state = state.byAdding(value: 1) }
                    operation.finish()
                }
            case .add(let amount):
                return ActionOperation(action: action, store: store) { operation, _, store in
                    store.updateState { state in state = state.byAdding(value: amount) }
                    operation.finish()
                }
            }
        }
    }
    // end-sample

    final class OriginalCounterView {}

    /// Runs the original Dispatch side; returns the final count.
    static func run() -> Int {
        let view = OriginalCounterView()
        // sample: original-use
        let store = Store<Counter, Counter.Action>(identifier: "counter", reducer: CounterReducer())
        Dispatcher.default.register(store: store)
        store.register(observer: view) { state, _ in
            print("count:", state.count)
        }
        Dispatcher.default.dispatch(Counter.Action.add(amount: 2))
        Dispatcher.default.dispatch(Counter.Action.increase)  // count: 3
        // end-sample
        return store.state.count
    }
}
