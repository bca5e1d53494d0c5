import DispatchStore
import Foundation
import TestSupport
import Testing

@Suite("Dispatcher: registration and routing")
struct DispatcherTests {
    @Test("an action reaches every store that handles its type, and only those")
    func routesByType() throws {
        let dispatcher = Dispatcher()
        let first = makeCounterStore("first")
        let second = makeCounterStore("second", reducer: CounterReducer())
        let text = Store<Text, TextAction>(identifier: "text", reducer: TextReducer())
        try dispatcher.register(store: first)
        try dispatcher.register(store: text)
        try dispatcher.register(store: second)

        let result = try #require(dispatchAndWait(dispatcher, CounterAction.add(5)))
        #expect(first.state.count == 5)
        #expect(second.state.count == 5)
        #expect(text.state.value == "")
        #expect(result.handledStores == ["first", "second"])
        #expect(result.transaction.storeIdentifiers == ["first", "second"])
        #expect(result.succeeded)

        dispatcher.dispatch(TextAction.append("hi"), mode: .sync)
        #expect(text.state.value == "hi")
        #expect(first.state.count == 5)
    }

    @Test("to: reaches only the named store", arguments: [DispatchMode.sync, .async, .serial, .mainThread])
    func routesByIdentifier(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let first = makeCounterStore("first")
        let second = makeCounterStore("second")
        try dispatcher.register(store: first)
        try dispatcher.register(store: second)

        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, to: "second", mode: mode))
        #expect(first.state.count == 0)
        #expect(second.state.count == 1)
        #expect(result.handledStores == ["second"])
        #expect(result.transaction.targetIdentifier == "second")
    }

    @Test("to: keeps reaching the store registered under the name now, whatever was named before")
    func targetsFollowRegistration() throws {
        let dispatcher = Dispatcher()
        // Names of one length that end alike share a slot among the recently named stores.
        let names = ["a1", "b1", "c1", "a2", "b2", "c2", "store10", "store20"]
        let stores = names.map { makeCounterStore($0) }
        for store in stores {
            try dispatcher.register(store: store)
        }
        for round in 1...3 {
            for (index, name) in names.enumerated() {
                for _ in 0...index {
                    dispatcher.dispatch(CounterAction.increase, to: name, mode: .sync)
                }
            }
            for (index, store) in stores.enumerated() {
                #expect(store.state.count == (index + 1) * round, "\(store.identifier)")
            }
        }

        // A name taken over by another store reaches the new one; a name given up reaches none.
        dispatcher.dispatch(CounterAction.increase, to: "b1", mode: .sync)
        let old = try #require(dispatcher.unregister(identifier: "b1") as? Store<Counter, CounterAction>)
        let replacement = makeCounterStore("b1")
        try dispatcher.register(store: replacement)
        dispatcher.dispatch(CounterAction.increase, to: "b1", mode: .sync)
        #expect(replacement.state.count == 1)
        #expect(old.state.count == 7)
        _ = dispatcher.unregister(identifier: "c2")
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, to: "c2"))
        #expect(result.error?.code == .unknownStore)
        #expect(stores[5].state.count == 18)
    }

    @Test("an unregistered store is freed at once, though dispatches named it and routed to it just before")
    func unregisteredStoreIsFreed() throws {
        let dispatcher = Dispatcher()
        weak var released: Store<Counter, CounterAction>?
        try {
            let store = makeCounterStore("gone")
            released = store
            try dispatcher.register(store: store)
            dispatcher.dispatch(CounterAction.increase, to: "gone", mode: .sync)
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
            #expect(store.state.count == 2)
        }()
        #expect(released != nil)
        _ = dispatcher.unregister(identifier: "gone")
        #expect(released == nil)
    }

    @Test(
        "an unknown identifier is reported through the completion, naming it",
        arguments: [DispatchMode.sync, .serial]
    )
    func unknownIdentifier(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)

        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, to: "missing", mode: mode))
        let error = try #require(result.error)
        #expect(error.code == .unknownStore)
        #expect(error.storeIdentifier == "missing")
        #expect(error.message.contains("'missing'"))
        #expect(result.isUnhandled)
        #expect(store.state.count == 0)
    }

    @Test("an identifier whose store handles another action type is reported")
    func mismatchedIdentifier() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: Store<Text, TextAction>(identifier: "text", reducer: TextReducer()))

        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, to: "text"))
        #expect(result.error?.code == .actionTypeMismatch)
        #expect(result.error?.message.contains("TextAction") == true)
        #expect(result.isUnhandled)
    }

    @Test(
        "an action no store handles is reported to the completion and to the middleware, never dropped",
        arguments: [DispatchMode.sync, .async, .serial, .mainThread]
    )
    func unhandledIsReported(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let log = EventLog()
        dispatcher.register(middleware: log)
        try dispatcher.register(store: makeCounterStore())

        let completions = Shared(0)
        let done = Gate()
        let result = Shared<DispatchResult?>(nil)
        dispatcher.dispatch(UnhandledAction(), mode: mode) { outcome in
            completions.increment()
            result.withLock { $0 = outcome }
            done.open()
        }
        #expect(done.wait())
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
        let reported = try #require(result.current)
        #expect(reported.isUnhandled)
        #expect(reported.error?.code == .unhandledAction)
        #expect(reported.error?.message.contains("UnhandledAction") == true)
        #expect(completions.current == 1)
        #expect(log.events.current == ["finish \(reported.transaction.id)"])
        #expect(log.results.current.first?.isUnhandled == true)
    }

    @Test("registering a duplicate identifier throws duplicateIdentifier naming it")
    func duplicateIdentifier() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("counter"))
        let error = #expect(throws: DispatchError.self) {
            try dispatcher.register(store: makeCounterStore("counter"))
        }
        #expect(error?.code == .duplicateIdentifier)
        #expect(error?.storeIdentifier == "counter")
        #expect(error?.description.contains("'counter'") == true)
        #expect(dispatcher.stores.count == 1)
    }

    @Test("a store registered with another dispatcher is rejected until unregistered there")
    func registeredElsewhere() throws {
        let first = Dispatcher()
        let second = Dispatcher()
        let store = makeCounterStore()
        try first.register(store: store)
        let error = #expect(throws: DispatchError.self) { try second.register(store: store) }
        #expect(error?.code == .storeRegisteredElsewhere)
        first.unregister(identifier: "counter")
        try second.register(store: store)
        second.dispatch(CounterAction.increase, mode: .sync)
        #expect(store.state.count == 1)
    }

    @Test("a failed registration leaves the store free to register elsewhere")
    func failedRegistrationReleasesStore() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("counter"))
        let duplicate = makeCounterStore("counter")
        #expect(throws: DispatchError.self) { try dispatcher.register(store: duplicate) }
        try Dispatcher().register(store: duplicate)
    }

    @Test("registering a store twice fails and leaves it owned by its dispatcher: another one refuses it")
    func secondRegistrationKeepsClaim() throws {
        let first = Dispatcher()
        let store = makeCounterStore("counter")
        try first.register(store: store)

        let again = #expect(throws: DispatchError.self) { try first.register(store: store) }
        #expect(again?.code == .duplicateIdentifier)

        let elsewhere = #expect(throws: DispatchError.self) { try Dispatcher().register(store: store) }
        #expect(elsewhere?.code == .storeRegisteredElsewhere)
        #expect(elsewhere?.storeIdentifier == "counter")
        first.dispatch(CounterAction.increase, mode: .sync)
        #expect(store.state.count == 1)
    }

    @Test("unregister(identifier:) removes only that store")
    func unregisterRemovesOnlyOne() throws {
        let dispatcher = Dispatcher()
        let stores = ["a", "b", "c"].map { makeCounterStore($0) }
        for store in stores {
            try dispatcher.register(store: store)
        }

        let removed = dispatcher.unregister(identifier: "b")
        #expect(removed === stores[1])
        #expect(dispatcher.stores.map(\.identifier) == ["a", "c"])
        #expect(dispatcher.store(with: "a") === stores[0])
        #expect(dispatcher.store(with: "c") === stores[2])
        #expect(dispatcher.store(with: "b") == nil)
        #expect(dispatcher.unregister(identifier: "b") == nil)

        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase))
        #expect(result.handledStores == ["a", "c"])
        #expect(stores.map(\.state.count) == [1, 0, 1])
    }

    @Test("thousands of registrations and removals, interleaved with dispatches, keep every route exact")
    func registryChurn() throws {
        let dispatcher = Dispatcher()
        var live: [String: Store<Counter, CounterAction>] = [:]
        var expected: [String: Int] = [:]
        var order: [String] = []
        for round in 0..<40 {
            for index in 0..<50 {
                let identifier = "s\(round)-\(index)"
                let store = makeCounterStore(identifier)
                try dispatcher.register(store: store)
                live[identifier] = store
                expected[identifier] = 0
                order.append(identifier)
            }
            // Remove every third live store, oldest first, so holes build up and get compacted.
            for (position, identifier) in order.enumerated() where position % 3 == round % 3 {
                #expect(dispatcher.unregister(identifier: identifier) === live[identifier])
                live[identifier] = nil
            }
            order.removeAll { live[$0] == nil }
            // The list is kept between changes: each round must see the one it made.
            #expect(dispatcher.stores.map(\.identifier) == order)
            let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase))
            #expect(result.handledStores == order)
            for identifier in order { expected[identifier, default: 0] += 1 }
        }
        #expect(dispatcher.stores.map(\.identifier) == order)
        for (identifier, store) in live {
            #expect(store.state.count == expected[identifier])
            #expect(dispatcher.store(with: identifier) === store)
        }
    }

    @Test("store(with:) returns the registered store, castable to its concrete type")
    func storeLookup() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let found = dispatcher.store(with: "counter") as? Store<Counter, CounterAction>
        #expect(found === store)
        #expect(dispatcher.store(with: "counter") as? Store<Text, TextAction> == nil)
        #expect(dispatcher.store(with: "nope") == nil)
        #expect(found?.anyState as? Counter == Counter())
        #expect(found?.actionType == CounterAction.self)
        #expect(found?.stateType == Counter.self)
    }

    @Test("registrations made while dispatching from other threads lose no action")
    func registrationDuringDispatch() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        concurrently(3) { thread in
            if thread == 0 {
                for index in 0..<200 {
                    let extra = Store<Text, TextAction>(identifier: "text-\(index)", reducer: TextReducer())
                    try? dispatcher.register(store: extra)
                    dispatcher.unregister(identifier: "text-\(index)")
                }
            } else {
                for _ in 0..<2_000 {
                    dispatcher.dispatch(CounterAction.increase, mode: .sync)
                }
            }
        }
        #expect(store.state.count == 4_000)
        #expect(dispatcher.stores.map(\.identifier) == ["counter"])
    }
}

@Suite("Transactions and completions")
struct TransactionTests {
    @Test("every dispatch gets one transaction with a unique id, across threads and dispatchers")
    func uniqueIDs() throws {
        let first = Dispatcher()
        let second = Dispatcher()
        try first.register(store: makeCounterStore())
        try second.register(store: makeCounterStore())
        let ids = Shared<[UInt64]>([])
        concurrently(4) { thread in
            let dispatcher = thread.isMultiple(of: 2) ? first : second
            for _ in 0..<1_000 {
                let transaction = dispatcher.dispatch(CounterAction.increase, mode: .sync) { result in
                    ids.append(result.transaction.id)
                }
                ids.append(transaction.id)
            }
        }
        let all = ids.current
        #expect(all.count == 8_000)
        #expect(Set(all).count == 4_000)
    }

    @Test("the transaction tells the action, the mode and the stores reached in order")
    func transactionContents() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("totals", waitsFor: ["counter"]))
        try dispatcher.register(store: makeCounterStore("counter"))
        let transaction = dispatcher.dispatch(CounterAction.add(3), mode: .serial)
        #expect(transaction.action as? CounterAction == .add(3))
        #expect(transaction.mode == .serial)
        #expect(transaction.storeIdentifiers == ["counter", "totals"])
        #expect(transaction.targetIdentifier == nil)
        #expect(transaction.description.contains("counter, totals"))
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
    }

    @Test(
        "the completion runs exactly once, after every store finished and committed",
        arguments: [DispatchMode.sync, .async, .serial, .mainThread]
    )
    func completionAfterAllStores(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let stores = ["a", "b", "c"].map { makeCounterStore($0, reducer: GatedCounterReducer(gate: gate)) }
        for store in stores {
            try dispatcher.register(store: store)
        }
        let completions = Shared(0)
        let seenAtCompletion = Shared<[Int]>([])
        let done = Gate()
        let opener = Thread { gate.open() }
        if mode == .sync { opener.start() }
        dispatcher.dispatch(CounterAction.add(2), mode: mode) { result in
            completions.increment()
            seenAtCompletion.withLock { $0 = stores.map(\.state.count) }
            #expect(result.handledStores == ["a", "b", "c"])
            done.open()
        }
        if mode != .sync {
            #expect(completions.current == 0)
            opener.start()
        }
        #expect(done.wait())
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
        #expect(completions.current == 1)
        #expect(seenAtCompletion.current == [2, 2, 2])
    }

    @Test("waitUntilIdle() without a timeout waits for the work in flight, then returns true")
    func waitUntilIdleWithoutTimeout() throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: store)
        dispatcher.dispatch(CounterAction.increase, mode: .serial)
        #expect(started.wait())
        let returned = Shared<Bool?>(nil)
        let done = Gate()
        onNewThread {
            returned.withLock { $0 = dispatcher.waitUntilIdle() }
            done.open()
        }
        // Not a timing guarantee of the test: only that it has not returned while work is in flight.
        #expect(!done.wait(seconds: 0.2))
        gate.open()
        #expect(done.wait())
        #expect(returned.current == true)
        #expect(store.state.count == 1)
    }

    @Test(
        "a .sync dispatch reaching more stores than fit on the stack applies the action once in each, in order",
        arguments: [false, true]
    )
    func longSyncRoute(oneOperationMidway: Bool) throws {
        let dispatcher = Dispatcher()
        // Twelve stores: more than the eight whose steps an inline run keeps in a fixed stack slot.
        // With `oneOperationMidway`, the tenth returns an operation of its own, so the run is handed
        // over to the heap after nine inline steps.
        let stores = (0..<12).map { index in
            makeCounterStore(
                "store\(index)",
                reducer: oneOperationMidway && index == 9 ? CounterReducer() : InlineCounterReducer()
            )
        }
        for store in stores {
            try dispatcher.register(store: store)
        }
        let results = Shared<[DispatchResult]>([])
        dispatcher.dispatch(CounterAction.add(3), mode: .sync) { result in
            results.append(result)
        }

        #expect(stores.map(\.state.count) == Array(repeating: 3, count: 12))
        let result = try #require(results.current.first)
        #expect(results.current.count == 1)
        #expect(result.handledStores == stores.map(\.identifier))
        #expect(result.outcomes.map(\.sequenceNumber) == Array(repeating: 1, count: 12))
        #expect(result.succeeded)
    }
}
