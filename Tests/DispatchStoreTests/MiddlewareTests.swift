import DispatchStore
import Foundation
import TestSupport
import Testing

/// Appends `name:hook:store` lines to a log shared with other middleware and observers.
private final class NamedMiddleware: Middleware, Sendable {
    let name: String
    let log: Shared<[String]>
    let readState: (@Sendable () -> Int)?

    init(_ name: String, log: Shared<[String]>, readState: (@Sendable () -> Int)? = nil) {
        self.name = name
        self.log = log
        self.readState = readState
    }

    private func suffix() -> String {
        readState.map { " count=\($0())" } ?? ""
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        log.append("\(name) will \(store.identifier)\(suffix())")
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        log.append("\(name) did \(store.identifier)\(suffix())")
    }

    func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        log.append("\(name) finish")
    }
}

@Suite("Middleware")
struct MiddlewareTests {
    @Test(
        "willDispatch and didDispatch run once per (transaction, store), in registration order",
        arguments: [DispatchMode.sync, .serial, .async, .mainThread]
    )
    func orderAndCount(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let log = Shared<[String]>([])
        dispatcher.register(middleware: NamedMiddleware("m1", log: log))
        dispatcher.register(middleware: NamedMiddleware("m2", log: log))
        try dispatcher.register(store: makeCounterStore("a"))
        try dispatcher.register(store: makeCounterStore("b", reducer: CounterReducer()))

        dispatchAndWait(dispatcher, CounterAction.increase, mode: mode)
        #expect(
            log.current == [
                "m1 will a", "m2 will a", "m1 did a", "m2 did a",
                "m1 will b", "m2 will b", "m1 did b", "m2 did b",
                "m1 finish", "m2 finish",
            ]
        )
    }

    @Test("willDispatch precedes the operation; didDispatch follows the commit and the observers")
    func hooksAroundOperation() throws {
        let dispatcher = Dispatcher()
        let log = Shared<[String]>([])
        let store = makeCounterStore(reducer: CounterReducer())
        dispatcher.register(middleware: NamedMiddleware("m", log: log, readState: { store.state.count }))
        try dispatcher.register(store: store)
        let subscription = store.subscribe { state, _ in log.append("observer count=\(state.count)") }

        dispatcher.dispatch(CounterAction.add(4), mode: .sync) { _ in log.append("completion") }
        #expect(
            log.current == [
                "m will counter count=0", "observer count=4", "m did counter count=4", "m finish", "completion",
            ]
        )
        subscription.cancel()
    }

    @Test("didFinish runs once per transaction with its result, before the completion")
    func didFinishOncePerTransaction() throws {
        let dispatcher = Dispatcher()
        let events = EventLog()
        dispatcher.register(middleware: events)
        try dispatcher.register(store: makeCounterStore("a"))
        try dispatcher.register(store: makeCounterStore("b"))
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, mode: .serial))
        let id = result.transaction.id
        #expect(
            events.events.current == ["will \(id) a", "did \(id) a", "will \(id) b", "did \(id) b", "finish \(id)"]
        )
        #expect(events.results.current.map(\.transaction) == [result.transaction])
    }

    @Test("under concurrent dispatches each (transaction, store) pair is seen exactly once, will before did")
    func concurrentPairs() throws {
        let dispatcher = Dispatcher()
        let events = EventLog()
        dispatcher.register(middleware: events)
        try dispatcher.register(store: makeCounterStore("a"))
        try dispatcher.register(store: makeCounterStore("b", reducer: CounterReducer()))
        let countdown = Countdown(4 * 500)
        concurrently(4) { thread in
            let modes: [DispatchMode] = [.async, .serial, .sync, .async]
            for _ in 0..<500 {
                dispatcher.dispatch(CounterAction.increase, mode: modes[thread]) { _ in countdown.tick() }
            }
        }
        #expect(countdown.wait())
        var firstSeen: [String: Int] = [:]
        var counts: [String: Int] = [:]
        for (index, event) in events.events.current.enumerated() {
            let parts = event.split(separator: " ")
            guard parts[0] != "finish" else { continue }
            let key = "\(parts[0]) \(parts[1]) \(parts[2])"
            counts[key, default: 0] += 1
            firstSeen[key] = firstSeen[key] ?? index
        }
        #expect(counts.count == 4 * 500 * 2 * 2)
        #expect(counts.values.allSatisfy { $0 == 1 })
        for (key, index) in firstSeen where key.hasPrefix("did ") {
            let will = "will " + key.dropFirst(4)
            #expect((firstSeen[String(will)] ?? Int.max) < index)
        }
    }

    @Test(
        "cancelling in willDispatch stops the store's operation, in every mode and wherever the store is in the route",
        arguments: [DispatchMode.sync, .async, .serial, .mainThread],
        [1, 2]
    )
    func cancelInWillDispatch(mode: DispatchMode, storeCount: Int) throws {
        final class Canceller: Middleware, Sendable {
            let target: String
            init(target: String) { self.target = target }
            func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
                if store.identifier == target { transaction.cancel() }
            }
            func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
        }
        let dispatcher = Dispatcher()
        let stores = ["first", "second"].prefix(storeCount).map { makeCounterStore($0, reducer: CounterReducer()) }
        for store in stores {
            try dispatcher.register(store: store)
        }
        let target = stores.last!.identifier
        let log = EventLog()
        dispatcher.register(middleware: Canceller(target: target))
        dispatcher.register(middleware: log)

        let result = try #require(dispatchAndWait(dispatcher, CounterAction.add(3), mode: mode))

        #expect(result.cancelledStores == [target])
        #expect(stores.last!.state.count == 0)
        #expect(stores.dropLast().allSatisfy { $0.state.count == 3 })
        let id = result.transaction.id
        #expect(log.events.current.filter { $0.hasPrefix("did \(id)") }.count == storeCount)
    }

    @Test("unregister(middleware:) stops its calls and tells it")
    func unregisterMiddleware() throws {
        final class Probe: Middleware, Sendable {
            let calls = Shared(0)
            let detached = Shared(0)
            func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
                calls.increment()
            }
            func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
            func didDetach(from dispatcher: Dispatcher) { detached.increment() }
        }
        let dispatcher = Dispatcher()
        let probe = Probe()
        let other = EventLog()
        dispatcher.register(middleware: probe)
        dispatcher.register(middleware: other)
        try dispatcher.register(store: makeCounterStore())
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.unregister(middleware: probe)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(probe.calls.current == 1)
        #expect(probe.detached.current == 1)
        #expect(other.results.current.count == 2)
        #expect(dispatcher.middleware.count == 1)
    }

    @Test("middleware are told about store registrations and their own attachment")
    func registrationHooks() throws {
        final class Probe: Middleware, Sendable {
            let events = Shared<[String]>([])
            func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
            func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
            func didAttach(to dispatcher: Dispatcher) { events.append("attach") }
            func didRegister(store: any AnyStore, in dispatcher: Dispatcher) { events.append("+\(store.identifier)") }
            func didUnregister(store: any AnyStore, in dispatcher: Dispatcher) { events.append("-\(store.identifier)") }
        }
        let dispatcher = Dispatcher()
        let probe = Probe()
        dispatcher.register(middleware: probe)
        try dispatcher.register(store: makeCounterStore("a"))
        dispatcher.unregister(identifier: "a")
        #expect(probe.events.current == ["attach", "+a", "-a"])
    }

    @Test("a middleware keeping its counts in Locked counts every hook exactly, across threads")
    func lockedState() async throws {
        final class Counting: Middleware {
            let counts = Locked([String: Int]())
            func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
                counts.withLock { $0["will \(store.identifier)", default: 0] += 1 }
            }
            func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
                counts.withLock { $0["did \(store.identifier)", default: 0] += 1 }
            }
            func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
                counts.withLock { $0["finish", default: 0] += 1 }
            }
        }
        let dispatcher = Dispatcher()
        let counting = Counting()
        dispatcher.register(middleware: counting)
        try dispatcher.register(store: makeCounterStore("a"))
        try dispatcher.register(store: makeCounterStore("b"))

        await offThePool {
            concurrently(4) { _ in
                for index in 0..<500 {
                    dispatcher.dispatch(CounterAction.increase, mode: index.isMultiple(of: 2) ? .sync : .async)
                }
            }
        }
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))

        let expected = ["will a": 2000, "did a": 2000, "will b": 2000, "did b": 2000, "finish": 2000]
        #expect(counting.counts.value == expected)
    }
}
