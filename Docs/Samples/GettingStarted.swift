// The samples of Docs/GettingStarted.md and of the README's quick start.

import DispatchStore
import Foundation
import Testing

enum GettingStarted {
    // sample: state
    struct Counter: StateType {
        var count = 0
    }

    enum CounterAction: ActionType {
        case increase
        case add(Int)
    }
    // end-sample

    // sample: reducer
    final class CounterReducer: Reducer<Counter, CounterAction> {
        override func reduce(_ action: CounterAction, into state: inout Counter) {
            switch action {
            case .increase: state.count += 1
            case .add(let amount): state.count += amount
            }
        }
    }
    // end-sample

    // sample: operation-reducer
    final class RemoteCounterReducer: Reducer<Counter, CounterAction> {
        override func operation(
            for action: CounterAction,
            in store: Store<Counter, CounterAction>
        ) -> ActionOperation<Counter, CounterAction> {
            ActionOperation(action: action, store: store) { operation, action, store in
                // Work elsewhere, then commit and finish, from whatever thread it ends on.
                DispatchQueue.global().async {
                    guard !operation.isCancelled else {
                        operation.finish()
                        return
                    }
                    store.updateState { state in
                        switch action {
                        case .increase: state.count += 1
                        case .add(let amount): state.count += amount
                        }
                    }
                    operation.finish()
                }
            }
        }
    }
    // end-sample

    @MainActor
    final class Screen {
        var label = ""

        func show(_ count: Int) {
            label = "\(count)"
        }
    }

    /// The guide's steps, in order; returns the count they end with.
    static func steps(screen: Screen) throws -> Int {
        // sample: setup
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: store)
        // end-sample

        // sample: observe
        // Called after every change, for as long as `subscription` is kept.
        let subscription = store.subscribe { state, action in
            print("count is", state.count, "after", action.map { "\($0)" } ?? "an update")
        }

        // Called for as long as `screen` lives (it is held weakly). Callbacks run on the thread
        // that commits the change: hop to the main actor to touch the user interface.
        store.register(observer: screen) { [weak screen] state, _ in
            Task { @MainActor in screen?.show(state.count) }
        }

        // Called only when `count` changes.
        let countWatch = store.subscribe(\.count) { count in
            print("the count changed to", count)
        }
        // end-sample

        // sample: dispatch
        // Returns once the store's state is committed and its observers ran.
        dispatcher.dispatch(CounterAction.add(2), mode: .sync)

        // Returns at once; the completion runs exactly once, when every store is done.
        dispatcher.dispatch(CounterAction.increase, mode: .serial) { result in
            print("handled by", result.handledStores)
        }

        // `.async` is the default mode; `to:` reaches one store by its identifier.
        dispatcher.dispatch(CounterAction.increase, to: "counter")

        dispatcher.waitUntilIdle()
        print(store.state.count)  // 4
        // end-sample

        subscription.cancel()
        countWatch.cancel()
        store.unregister(observer: screen)
        return store.state.count
    }

    static func asyncSteps() async throws -> [Int] {
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: store)

        // sample: async
        let result = await dispatcher.perform(CounterAction.add(5))
        print(result.succeeded, store.state.count)  // true 5

        let states = store.states()  // the current state, then every committed change
        let watcher = Task {
            var counts: [Int] = []
            for await state in states {
                counts.append(state.count)
                if state.count == 7 { break }
            }
            return counts
        }
        await dispatcher.perform(CounterAction.increase)
        await dispatcher.perform(CounterAction.increase)
        print(await watcher.value)  // [5, 6, 7]
        // end-sample

        return await watcher.value
    }
}

@Suite("Docs: getting started")
struct GettingStartedSamples {
    @Test("the steps of the guide end where it says")
    @MainActor
    func steps() throws {
        let screen = GettingStarted.Screen()
        #expect(try GettingStarted.steps(screen: screen) == 4)
    }

    @Test("an ActionOperation reducer finishing on another thread gives the same counts")
    func operationReducer() throws {
        let dispatcher = Dispatcher()
        let store = Store<GettingStarted.Counter, GettingStarted.CounterAction>(
            identifier: "remote",
            reducer: GettingStarted.RemoteCounterReducer()
        )
        try dispatcher.register(store: store)
        dispatcher.dispatch(GettingStarted.CounterAction.add(3), mode: .sync)
        dispatcher.dispatch(GettingStarted.CounterAction.increase, mode: .sync)
        #expect(store.state.count == 4)
    }

    @Test("the async steps see the current state, then each change")
    func asyncSteps() async throws {
        #expect(try await GettingStarted.asyncSteps() == [5, 6, 7])
    }
}
