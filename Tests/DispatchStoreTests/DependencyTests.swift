import DispatchStore
import Foundation
import TestSupport
import Testing

/// Records, when its operation starts, the counter store's state and its own dependencies.
private final class TotalsReducer: Reducer<Counter, CounterAction> {
    let counter: Store<Counter, CounterAction>
    let seenCounter = Shared<[Int]>([])
    let dependencyCounts = Shared<[Int]>([])

    init(counter: Store<Counter, CounterAction>) {
        self.counter = counter
    }

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let counter = counter
        let seenCounter = seenCounter
        let dependencyCounts = dependencyCounts
        return ActionOperation(action: action, store: store) { operation, _, store in
            let count = counter.state.count
            seenCounter.append(count)
            dependencyCounts.append(operation.dependencies.count)
            store.updateState { $0.count = count * 10 }
            operation.finish()
        }
    }
}

private final class FailingReducer: Reducer<Counter, CounterAction> {
    struct Failure: Error {}

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { operation, _, _ in
            operation.finish(throwing: Failure())
        }
    }
}

@Suite("Store dependencies (waitsFor)")
struct DependencyTests {
    @Test(
        "a store's operation starts after the operations of the stores it waits for finished",
        arguments: [DispatchMode.sync, .async, .serial, .mainThread]
    )
    func waitsForOrdering(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let counter = makeCounterStore("counter", reducer: GatedCounterReducer(gate: gate))
        let totals = TotalsReducer(counter: counter)
        // Registered first, so only the dependency can put it second.
        try dispatcher.register(store: makeCounterStore("totals", reducer: totals, waitsFor: ["counter"]))
        try dispatcher.register(store: counter)
        onNewThread { gate.open() }
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.add(4), mode: mode))
        #expect(result.transaction.storeIdentifiers == ["counter", "totals"])
        #expect(totals.seenCounter.current == [4])
        #expect(totals.dependencyCounts.current == [1])
        #expect(result.succeeded)
    }

    @Test("waitsFor orders stores through a store the action does not reach")
    func transitiveThroughOtherStore() throws {
        let dispatcher = Dispatcher()
        let counter = makeCounterStore("a")
        let totals = TotalsReducer(counter: counter)
        try dispatcher.register(store: makeCounterStore("c", reducer: totals, waitsFor: ["b"]))
        try dispatcher.register(
            store: Store<Text, TextAction>(identifier: "b", reducer: TextReducer(), waitsFor: ["a"])
        )
        try dispatcher.register(store: counter)
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.add(2)))
        #expect(result.transaction.storeIdentifiers == ["a", "c"])
        #expect(totals.seenCounter.current == [2])
    }

    @Test("a store may wait for stores that are not registered yet")
    func waitsForUnregistered() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore("totals", waitsFor: ["later"])
        try dispatcher.register(store: store)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(store.state.count == 1)
    }

    @Test("registration rejects a dependency cycle and names it")
    func cycles() throws {
        let dispatcher = Dispatcher()
        let selfCycle = #expect(throws: DispatchError.self) {
            try dispatcher.register(store: makeCounterStore("self", waitsFor: ["self"]))
        }
        #expect(selfCycle?.code == .dependencyCycle)
        #expect(selfCycle?.cycle == ["self", "self"])

        try dispatcher.register(store: makeCounterStore("a", waitsFor: ["b"]))
        try dispatcher.register(store: makeCounterStore("b", waitsFor: ["c"]))
        let longCycle = #expect(throws: DispatchError.self) {
            try dispatcher.register(store: makeCounterStore("c", waitsFor: ["a"]))
        }
        #expect(longCycle?.cycle == ["c", "a", "b", "c"])
        #expect(longCycle?.message.contains("c -> a -> b -> c") == true)
        #expect(dispatcher.stores.map(\.identifier) == ["a", "b"])

        // A store named before it exists closes the cycle when it registers.
        try dispatcher.register(store: makeCounterStore("c", waitsFor: ["d"]))
        let throughLater = #expect(throws: DispatchError.self) {
            try dispatcher.register(
                store: Store<Text, TextAction>(identifier: "d", reducer: TextReducer(), waitsFor: ["b"])
            )
        }
        #expect(throughLater?.cycle == ["d", "b", "c", "d"])
    }

    @Test("a store that waits for a failed or cancelled store is cancelled, and the result says which")
    func dependentsOfFailures() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("counter", reducer: FailingReducer()))
        let totals = makeCounterStore("totals", waitsFor: ["counter"])
        let independent = makeCounterStore("independent")
        try dispatcher.register(store: totals)
        try dispatcher.register(store: independent)
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, mode: .serial))
        #expect(result.failures.map(\.storeIdentifier) == ["counter"])
        #expect(result.failures.first?.error is FailingReducer.Failure)
        #expect(result.cancelledStores == ["totals"])
        #expect(result.handledStores == ["independent"])
        #expect(totals.state.count == 0)
        #expect(independent.state.count == 1)
        #expect(!result.succeeded && result.hasFailures && result.wasCancelled)
    }
}
