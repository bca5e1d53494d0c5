import DispatchStore
import Foundation
import TestSupport
import Testing

private struct Pair: StateType {
    var left = 0
    var right = 0
}

private enum PairAction: ActionType {
    case bump
}

private final class PairReducer: Reducer<Pair, PairAction> {
    override func reduce(_ action: PairAction, into state: inout Pair) {
        state.left += 1
        state.right += 1
    }
}

/// Updates the state several times from another thread before finishing.
private final class BackgroundUpdatesReducer: Reducer<Counter, CounterAction> {
    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { operation, _, store in
            onNewThread {
                for _ in 0..<3 {
                    store.updateState { $0.count += 1 }
                }
                operation.finish()
            }
        }
    }
}

private final class Observer: Sendable {
    let calls = Shared<[Int]>([])
}

@Suite("Store: state and locking")
struct StoreStateTests {
    @Test("updateState is atomic under concurrent writers")
    func atomicUpdates() {
        let store = makeCounterStore()
        concurrently(8) { _ in
            for _ in 0..<5_000 {
                store.updateState { $0.count += 1 }
            }
        }
        #expect(store.state.count == 40_000)
    }

    @Test("a state read is a consistent snapshot from any thread")
    func consistentReads() throws {
        let dispatcher = Dispatcher()
        let store = Store<Pair, PairAction>(identifier: "pair", reducer: PairReducer())
        try dispatcher.register(store: store)
        let torn = Shared(0)
        concurrently(4) { thread in
            for _ in 0..<5_000 {
                if thread < 2 {
                    dispatcher.dispatch(PairAction.bump, mode: thread == 0 ? .sync : .async)
                } else {
                    let snapshot = store.state
                    if snapshot.left != snapshot.right { torn.increment() }
                }
            }
        }
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
        #expect(torn.current == 0)
        #expect(store.state.left == 10_000)
        #expect(store.state.right == 10_000)
    }

    @Test("updateState returns the closure's result and rethrows its error")
    func updateStateResult() {
        struct Failure: Error {}
        let store = makeCounterStore()
        let doubled = store.updateState { state -> Int in
            state.count = 21
            return state.count * 2
        }
        #expect(doubled == 42)
        #expect(throws: Failure.self) { try store.updateState { _ in throw Failure() } }
        #expect(store.state.count == 21)
    }

    @Test("reading a store's state from inside its own updateState stops with a message naming the store")
    func reentrantReadStops() async {
        await #expect(processExitsWith: .failure) {
            let store = makeCounterStore("offender")
            store.updateState { _ in _ = store.state }
        }
    }

    @Test("a .sync dispatch from inside updateState is reported as re-entrant instead of deadlocking")
    func reentrantSyncDispatch() throws {
        for reducer in [InlineCounterReducer(), CounterReducer()] as [Reducer<Counter, CounterAction>] {
            let dispatcher = Dispatcher()
            let store = makeCounterStore(reducer: reducer)
            try dispatcher.register(store: store)
            let result = Shared<DispatchResult?>(nil)
            store.updateState { state in
                state.count = 10
                dispatcher.dispatch(CounterAction.increase, mode: .sync) { outcome in result.withLock { $0 = outcome } }
            }
            let outcome = try #require(result.current)
            let error = try #require(outcome.failures.first?.error as? DispatchError)
            #expect(error.code == .reentrantDispatch)
            #expect(error.storeIdentifier == "counter")
            #expect(store.state.count == 10)
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
            #expect(store.state.count == 11)
        }
    }
}

@Suite("Store: observers")
struct StoreObserverTests {
    @Test("observers receive each finished operation's state and action, in commit order", arguments: [false, true])
    func commitOrder(operations: Bool) throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: operations ? CounterReducer() : InlineCounterReducer())
        try dispatcher.register(store: store)
        let seen = Shared<[String]>([])
        let subscription = store.subscribe { state, action in
            seen.append("\(state.count) \(action.map { "\($0)" } ?? "nil")")
        }
        let done = Countdown(100)
        for amount in 1...100 {
            dispatcher.dispatch(CounterAction.add(amount), mode: .serial) { _ in done.tick() }
        }
        #expect(done.wait())
        let expected = (1...100).map { amount in "\(amount * (amount + 1) / 2) add(\(amount))" }
        #expect(seen.current == expected)
        _ = subscription
    }

    @Test("under concurrent commits every observer sees every change once, in the same order")
    func concurrentCommitsSameOrder() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let first = Shared<[Int]>([])
        let second = Shared<[Int]>([])
        let subscriptions = [
            store.subscribe { state, _ in first.append(state.count) },
            store.subscribe { state, _ in second.append(state.count) },
        ]
        concurrently(4) { thread in
            for _ in 0..<1_000 {
                dispatcher.dispatch(CounterAction.increase, mode: thread.isMultiple(of: 2) ? .sync : .async)
            }
        }
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
        #expect(first.current == Array(1...4_000))
        #expect(second.current == first.current)
        _ = subscriptions
    }

    @Test("observers are called outside the store's lock")
    func outsideLock() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let readFromAnotherThread = Shared<[Bool]>([])
        let subscription = store.subscribe { state, _ in
            guard state.count == 1 else { return }
            let read = Gate()
            onNewThread {
                _ = store.state
                read.open()
            }
            readFromAnotherThread.append(read.wait(seconds: 600))
            store.updateState { $0.count += 1 }
        }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(readFromAnotherThread.current == [true])
        #expect(store.state.count == 2)
        _ = subscription
    }

    @Test("an update outside any operation is reported at once with a nil action")
    func externalUpdate() {
        let store = makeCounterStore()
        let seen = Shared<[String]>([])
        let subscription = store.subscribe { state, action in
            seen.append("\(state.count) \(String(describing: action))")
        }
        store.updateState { $0.count = 7 }
        #expect(seen.current == ["7 nil"])
        _ = subscription
    }

    @Test("updates made by an operation, even from another thread, are reported once when it finishes")
    func updatesBelongToTheOperation() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: BackgroundUpdatesReducer())
        try dispatcher.register(store: store)
        let seen = Shared<[String]>([])
        let subscription = store.subscribe { state, action in
            seen.append("\(state.count) \(String(describing: action))")
        }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(seen.current == ["3 Optional(TestSupport.CounterAction.increase)"])
        _ = subscription
    }

    @Test("observers are held weakly: a released observer is neither called nor kept alive")
    func weakObservers() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let calls = Shared(0)
        weak var released: Observer?
        do {
            let observer = Observer()
            released = observer
            store.register(observer: observer) { [weak observer] state, _ in
                observer?.calls.append(state.count)
                calls.increment()
            }
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
            #expect(observer.calls.current == [1])
        }
        #expect(released == nil)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(calls.current == 1)
    }

    @Test("a callback that does not mention its observer still ends with the observer")
    func observerLifetimeBoundsCallback() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let calls = Shared(0)
        var observer: Observer? = Observer()
        store.register(observer: observer!) { _, _ in calls.increment() }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        observer = nil
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(calls.current == 1)
    }

    @Test("unregister(observer:) stops that observer's callbacks and keeps the others")
    func unregisterObserver() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let first = Observer()
        let second = Observer()
        store.register(observer: first) { state, _ in first.calls.append(state.count) }
        store.register(observer: first) { state, _ in first.calls.append(state.count * 100) }
        store.register(observer: second) { state, _ in second.calls.append(state.count) }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        store.unregister(observer: first)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(first.calls.current == [1, 100])
        #expect(second.calls.current == [1, 2])
    }

    @Test("a token cancels one registration; a subscription ends when released or cancelled")
    func tokensAndSubscriptions() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let observer = Observer()
        let token = store.register(observer: observer) { state, _ in observer.calls.append(state.count) }
        let owned = Shared<[Int]>([])
        var subscription: Subscription? = store.subscribe { state, _ in owned.append(state.count) }
        let cancelled = Shared<[Int]>([])
        let explicit = store.subscribe { state, _ in cancelled.append(state.count) }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        token.cancel()
        subscription = nil
        explicit.cancel()
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(observer.calls.current == [1])
        #expect(owned.current == [1])
        #expect(cancelled.current == [1])
        #expect(token.isCancelled && explicit.isCancelled)
        #expect(subscription == nil)
    }

    @Test("a key-path subscription is called only when its value changes")
    func keyPathSubscription() throws {
        let dispatcher = Dispatcher()
        let store = Store<Pair, PairAction>(identifier: "pair", reducer: PairReducer())
        try dispatcher.register(store: store)
        let lefts = Shared<[Int]>([])
        let rights = Shared<[Int]>([])
        let subscriptions = [
            store.subscribe(\.left) { lefts.append($0) },
            store.subscribe(\.right) { rights.append($0) },
            store.subscribe(\.right) { rights.append($0 * 10) },
        ]
        dispatcher.dispatch(PairAction.bump, mode: .sync)
        store.updateState { $0.left = 1 }
        store.updateState { $0.left = 5 }
        subscriptions[2].cancel()
        dispatcher.dispatch(PairAction.bump, mode: .sync)
        #expect(lefts.current == [1, 5, 6])
        #expect(rights.current == [1, 10, 2])
    }

    @Test("registering and cancelling observers from inside a callback is safe")
    func mutateObserversDuringDelivery() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let late = Shared<[Int]>([])
        let held = Shared<[Subscription]>([])
        let first = store.subscribe { state, _ in
            if state.count == 1 {
                held.append(store.subscribe { state, _ in late.append(state.count) })
            }
        }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(late.current == [2])
        _ = first
    }
}
