// The ReSwift side of Docs/ComingFromReSwift.md, compiled against a stand-in with ReSwift's API.

import ReSwiftLookalike

// sample: reswift
struct AppState {
    var counter = 0
}

struct CounterActionIncrease: Action {}
struct CounterActionAdd: Action {
    let amount: Int
}

func counterReducer(action: any Action, state: AppState?) -> AppState {
    var state = state ?? AppState()
    switch action {
    case _ as CounterActionIncrease: state.counter += 1
    case let add as CounterActionAdd: state.counter += add.amount
    default: break
    }
    return state
}

final class CounterView: StoreSubscriber {
    func newState(state: AppState) {
        print("count:", state.counter)
    }
}
// end-sample

/// Runs the ReSwift side; returns the final count.
func runReSwiftCounter() -> Int {
    // sample: reswift-use
    let store = Store<AppState>(reducer: counterReducer, state: nil)
    let view = CounterView()
    store.subscribe(view)
    store.dispatch(CounterActionAdd(amount: 2))
    store.dispatch(CounterActionIncrease())  // count: 3
    store.unsubscribe(view)
    // end-sample
    return store.state.counter
}
