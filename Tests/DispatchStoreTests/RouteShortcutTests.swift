import Foundation
import TestSupport
import Testing

@testable import DispatchStore

/// A reducer that counts how often it is asked for an operation, and returns one for `.add`.
private final class AskedCounterReducer: Reducer<Counter, CounterAction> {
    let asked = Shared(0)

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction>? {
        asked.increment()
        guard case .add(let amount) = action else { return nil }
        return ActionOperation(action: action, store: store) { operation, _, store in
            store.updateState { $0.count += amount }
            operation.finish()
        }
    }

    override func reduce(_ action: CounterAction, into state: inout Counter) {
        if case .increase = action { state.count += 1 }
    }
}

/// A reducer that runs `during` inside `reduce(_:into:)`, under the store's lock.
private final class ReentrantCounterReducer: Reducer<Counter, CounterAction> {
    let during: @Sendable () -> Void

    init(during: @escaping @Sendable () -> Void) {
        self.during = during
    }

    override func reduce(_ action: CounterAction, into state: inout Counter) {
        state.count += 1
        if state.count == 1 { during() }
    }
}

@Suite("Shortcuts: .sync dispatches nobody reads skip the engine")
struct RouteShortcutTests {
    /// Whether the calling thread remembers a shortcut for `CounterAction` on `dispatcher`.
    private static func remembers(_ dispatcher: Dispatcher) -> Bool {
        ThreadContext.current.shortcut(
            engine: ObjectIdentifier(dispatcher.engine),
            type: ObjectIdentifier(CounterAction.self)
        ) != nil
    }

    @Test("the first .sync dispatch gives the thread a shortcut; the transactions name the store, ids increase")
    func shortcutTaken() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: InlineCounterReducer())
        try dispatcher.register(store: store)
        let transactions = (0..<5).map { _ in dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        #expect(Self.remembers(dispatcher))
        #expect(store.state.count == 5)
        #expect(store.sequenceNumber == 5)
        #expect(transactions.allSatisfy { $0.storeIdentifiers == ["counter"] && $0.mode == .sync })
        #expect(transactions.allSatisfy { $0.targetIdentifier == nil && $0.action as? CounterAction == .increase })
        #expect(zip(transactions, transactions.dropFirst()).allSatisfy { $0.id < $1.id })
        // Cancelling a finished `.sync` transaction does nothing.
        transactions[0].cancel()
        #expect(store.state.count == 5)
    }

    @Test("ids increase on a thread across dispatchers, rejected dispatches included")
    func idsIncreaseAcrossRejection() async throws {
        let first = Dispatcher()
        let second = Dispatcher()
        try first.register(store: makeCounterStore(reducer: InlineCounterReducer()))
        try second.register(store: makeCounterStore(reducer: InlineCounterReducer()))
        _ = await first.shutdown()
        // No suspension from here on: the three dispatches are made on one thread.
        let before = second.dispatch(CounterAction.increase, mode: .sync)
        let rejected = first.dispatch(CounterAction.increase, mode: .sync)
        let after = second.dispatch(CounterAction.increase, mode: .sync)
        #expect(before.id < rejected.id)
        #expect(rejected.id < after.id)
    }

    @Test("a store registered, or unregistered, after the thread took a shortcut changes its next dispatch")
    func registrationRetires() throws {
        let dispatcher = Dispatcher()
        let first = makeCounterStore("first", reducer: InlineCounterReducer())
        try dispatcher.register(store: first)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(Self.remembers(dispatcher))
        let second = makeCounterStore("second", reducer: InlineCounterReducer())
        try dispatcher.register(store: second)
        let both = dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(both.storeIdentifiers == ["first", "second"])
        #expect(first.state.count == 3 && second.state.count == 1)
        _ = dispatcher.unregister(identifier: "first")
        for _ in 0..<3 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        #expect(first.state.count == 3 && second.state.count == 4)
        #expect(Self.remembers(dispatcher), "the route of one store gave the thread a new shortcut")
    }

    @Test("a middleware registered after the thread took a shortcut sees every later .sync dispatch")
    func middlewareRetires() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: InlineCounterReducer())
        try dispatcher.register(store: store)
        for _ in 0..<3 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        let log = EventLog()
        dispatcher.register(middleware: log)
        for _ in 0..<3 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        #expect(log.events.current.filter { $0.hasPrefix("will") }.count == 3)
        #expect(!Self.remembers(dispatcher), "with a middleware, no shortcut")
        dispatcher.unregister(middleware: log)
        for _ in 0..<3 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        #expect(log.events.current.filter { $0.hasPrefix("will") }.count == 3)
        #expect(store.state.count == 9)
        #expect(Self.remembers(dispatcher))
    }

    @Test("after a shutdown, a .sync dispatch through a former shortcut is rejected, not applied")
    func shutdownRetires() async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: InlineCounterReducer())
        try dispatcher.register(store: store)
        let dispatched = Gate()
        let shutDown = Gate()
        let done = Gate()
        let remembered = Shared(false)
        // One thread, so that the dispatch after the shutdown is its thread's shortcut's.
        onNewThread {
            for _ in 0..<3 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
            remembered.withLock { $0 = Self.remembers(dispatcher) }
            dispatched.open()
            _ = shutDown.wait()
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
            done.open()
        }
        #expect(await dispatched.wait())
        #expect(remembered.current)
        _ = await dispatcher.shutdown()
        shutDown.open()
        #expect(await done.wait())
        #expect(store.state.count == 3)
        let report = await dispatcher.shutdown()
        #expect(report.rejected == 1)
    }

    @Test("an unregistered store is freed at once, though another thread dispatched to it through a shortcut")
    func unregisteredStoreIsFreed() throws {
        let dispatcher = Dispatcher()
        weak var released: Store<Counter, CounterAction>?
        let dispatched = Gate()
        let finish = Gate()
        let threadDone = Gate()
        let remembered = Shared(false)
        try {
            let store = makeCounterStore("gone", reducer: InlineCounterReducer())
            released = store
            try dispatcher.register(store: store)
        }()
        onNewThread {
            for _ in 0..<3 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
            remembered.withLock { $0 = Self.remembers(dispatcher) }
            dispatched.open()
            // The thread stays alive, and keeps its shortcut, until the store was checked.
            _ = finish.wait()
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
            threadDone.open()
        }
        #expect(dispatched.wait())
        #expect(remembered.current)
        #expect(released?.state.count == 3)
        _ = dispatcher.unregister(identifier: "gone")
        #expect(released == nil)
        finish.open()
        #expect(threadDone.wait())
    }

    @Test("through a shortcut, the reducer is asked once per dispatch, and an operation it returns runs once")
    func reducerAskedOnce() throws {
        let dispatcher = Dispatcher()
        let reducer = AskedCounterReducer()
        let store = makeCounterStore(reducer: reducer)
        try dispatcher.register(store: store)
        for index in 0..<100 {
            dispatcher.dispatch(index.isMultiple(of: 4) ? CounterAction.add(10) : .increase, mode: .sync)
        }
        #expect(reducer.asked.current == 100)
        #expect(store.state.count == 25 * 10 + 75)
        #expect(store.sequenceNumber == 100)
        #expect(Self.remembers(dispatcher))
    }

    @Test("a .sync dispatch from inside the store's own reduce is refused, not applied, and nothing deadlocks")
    func reentrantDispatchFromReduce() throws {
        let dispatcher = Dispatcher()
        let inner = Shared<[DispatchResult]>([])
        let store = makeCounterStore(
            reducer: ReentrantCounterReducer {
                dispatcher.dispatch(CounterAction.increase, mode: .sync)
                dispatcher.dispatch(CounterAction.increase, mode: .sync) { inner.append($0) }
            }
        )
        try dispatcher.register(store: store)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(store.state.count == 2)
        let error = try #require(inner.current.first?.failures.first?.error as? DispatchError)
        #expect(error.code == .reentrantDispatch && error.storeIdentifier == "counter")
    }

    @Test("dispatchers made one after another, often at one address, never reach each other's stores")
    func engineAddressReuse() throws {
        for round in 0..<200 {
            let dispatcher = Dispatcher()
            let store = makeCounterStore("counter-\(round)", reducer: InlineCounterReducer())
            try dispatcher.register(store: store)
            for _ in 0..<3 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
            #expect(store.state.count == 3)
        }
    }

    @Test("4 threads dispatch .sync while stores and middleware come and go: exact totals")
    func concurrentRegistrations() throws {
        let dispatcher = Dispatcher()
        let permanent = makeCounterStore("permanent", reducer: InlineCounterReducer())
        try dispatcher.register(store: permanent)
        let perThread = 20_000
        let stop = Shared(false)
        let churned = Shared(0)
        let churnDone = Gate()
        let visitors = Shared<[Store<Counter, CounterAction>]>([])
        onNewThread {
            var round = 0
            while !stop.current {
                let visitor = makeCounterStore("visitor-\(round)", reducer: InlineCounterReducer())
                try? dispatcher.register(store: visitor)
                visitors.append(visitor)
                let log = EventLog()
                if round.isMultiple(of: 3) { dispatcher.register(middleware: log) }
                _ = dispatcher.unregister(identifier: "visitor-\(round)")
                dispatcher.unregister(middleware: log)
                round += 1
            }
            churned.withLock { $0 = round }
            churnDone.open()
        }
        concurrently(4) { _ in
            for _ in 0..<perThread { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        }
        stop.withLock { $0 = true }
        #expect(churnDone.wait())
        #expect(permanent.state.count == 4 * perThread)
        #expect(permanent.sequenceNumber == UInt64(4 * perThread))
        let visited = visitors.current.reduce(0) { $0 + $1.state.count }
        #expect(visited <= 4 * perThread)
        #expect(churned.current > 0)
    }
}
