import DispatchStore
import Foundation
import TestSupport
import Testing

/// Calls `finish()` twice and records what each call returned.
private final class DoubleFinishReducer: Reducer<Counter, CounterAction> {
    let returned = Shared<[Bool]>([])

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let returned = returned
        return ActionOperation(action: action, store: store) { operation, _, store in
            store.updateState { $0.count += 1 }
            returned.append(operation.finish())
            onNewThread { returned.append(operation.finish()) }
        }
    }
}

/// Returns operations that are already cancelled.
private final class CancelledReducer: Reducer<Counter, CounterAction> {
    let bodyRuns = Shared(0)

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let bodyRuns = bodyRuns
        let operation = ActionOperation(action: action, store: store) { operation, _, store in
            bodyRuns.increment()
            store.updateState { $0.count += 1 }
            operation.finish()
        }
        operation.cancel()
        return operation
    }
}

/// Returns the same operation every time.
private final class ReusingReducer: Reducer<Counter, CounterAction> {
    let cached = Shared<ActionOperation<Counter, CounterAction>?>(nil)

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        cached.withLock { cached in
            if let cached { return cached }
            let operation = ActionOperation(action: action, store: store) { operation, _, store in
                store.updateState { $0.count += 1 }
                operation.finish()
            }
            cached = operation
            return operation
        }
    }
}

/// Runs until cancelled, then finishes.
private final class CancellableReducer: Reducer<Counter, CounterAction> {
    let started = Gate()

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let started = started
        return ActionOperation(action: action, store: store) { operation, _, _ in
            started.open()
            onNewThread {
                while !operation.isCancelled { usleep(200) }
                operation.finish()
            }
        }
    }
}

@Suite("ActionOperation")
struct ActionOperationTests {
    @Test("finish() twice is harmless: it returns false and nothing runs twice")
    func finishTwice() throws {
        let dispatcher = Dispatcher()
        let reducer = DoubleFinishReducer()
        let store = makeCounterStore(reducer: reducer)
        try dispatcher.register(store: store)
        let events = EventLog()
        dispatcher.register(middleware: events)
        let observed = Shared(0)
        let subscription = store.subscribe { _, _ in observed.increment() }
        let completions = Shared(0)
        let secondCall = Countdown(2)
        dispatcher.dispatch(CounterAction.increase, mode: .serial) { _ in
            completions.increment()
            secondCall.tick()
        }
        // Wait for the second finish() as well as the completion.
        let returned = reducer.returned
        onNewThread {
            while returned.current.count < 2 { usleep(100) }
            secondCall.tick()
        }
        #expect(secondCall.wait())
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
        #expect(reducer.returned.current == [true, false])
        #expect(completions.current == 1)
        #expect(observed.current == 1)
        #expect(events.events.current.filter { $0.hasPrefix("did") }.count == 1)
        _ = subscription
    }

    @Test("start() honours cancellation: a cancelled operation's body never runs")
    func startHonoursCancellation() throws {
        let store = makeCounterStore()
        let ran = Shared(false)
        let operation = ActionOperation(action: CounterAction.increase, store: store) { operation, _, _ in
            ran.withLock { $0 = true }
            operation.finish()
        }
        operation.cancel()
        operation.start()
        #expect(!ran.current)
        #expect(operation.isFinished)
        #expect(!operation.isExecuting)

        let dispatcher = Dispatcher()
        let reducer = CancelledReducer()
        let cancelledStore = makeCounterStore("cancelled", reducer: reducer)
        try dispatcher.register(store: cancelledStore)
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, mode: .async))
        #expect(result.cancelledStores == ["cancelled"])
        #expect(reducer.bodyRuns.current == 0)
        #expect(cancelledStore.state.count == 0)
    }

    @Test("finish(throwing:) reports the store as failed with the error")
    func finishThrowing() throws {
        struct Boom: Error, Equatable {}
        let store = makeCounterStore()
        let operation = ActionOperation(action: CounterAction.increase, store: store) { operation, _, _ in
            operation.finish(throwing: Boom())
        }
        operation.start()
        #expect(operation.error as? Boom == Boom())
        #expect(operation.isFinished)
    }

    @Test("a reducer that returns an operation already used is reported, not run twice")
    func reusedOperation() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: ReusingReducer())
        try dispatcher.register(store: store)
        #expect(dispatchAndWait(dispatcher, CounterAction.increase)?.succeeded == true)
        let second = try #require(dispatchAndWait(dispatcher, CounterAction.increase))
        let error = try #require(second.failures.first?.error as? DispatchError)
        #expect(error.code == .operationReused)
        #expect(error.message.contains("'counter'"))
        #expect(store.state.count == 1)
    }

    @Test("cancelling a transaction cancels its running operation, which sees isCancelled")
    func cancelRunning() throws {
        let dispatcher = Dispatcher()
        let reducer = CancellableReducer()
        let store = makeCounterStore(reducer: reducer)
        try dispatcher.register(store: store)
        let result = Shared<DispatchResult?>(nil)
        let done = Gate()
        let transaction = dispatcher.dispatch(CounterAction.increase, mode: .serial) { outcome in
            result.withLock { $0 = outcome }
            done.open()
        }
        #expect(reducer.started.wait())
        transaction.cancel()
        #expect(done.wait())
        #expect(result.current?.cancelledStores == ["counter"])
    }

    @Test("cancelling a queued transaction skips it; the serial lane goes on")
    func cancelQueued() throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: store)
        let results = Shared<[DispatchResult]>([])
        let done = Countdown(3)
        dispatcher.dispatch(CounterAction.add(1), mode: .serial) {
            results.append($0)
            done.tick()
        }
        #expect(started.wait())
        let skipped = dispatcher.dispatch(CounterAction.add(10), mode: .serial) {
            results.append($0)
            done.tick()
        }
        dispatcher.dispatch(CounterAction.add(100), mode: .serial) {
            results.append($0)
            done.tick()
        }
        skipped.cancel()
        gate.open()
        #expect(done.wait())
        #expect(results.current.map(\.wasCancelled) == [false, true, false])
        #expect(store.state.count == 101)
    }

    @Test("an operation with a dependency of its own waits for it")
    func externalDependency() throws {
        final class DependentReducer: Reducer<Counter, CounterAction> {
            let external: Operation
            init(external: Operation) { self.external = external }
            override func operation(
                for action: CounterAction,
                in store: Store<Counter, CounterAction>
            ) -> ActionOperation<Counter, CounterAction> {
                let operation = ActionOperation(action: action, store: store) { operation, _, store in
                    store.updateState { $0.count = $0.count * 2 + 1 }
                    operation.finish()
                }
                operation.addDependency(external)
                return operation
            }
        }
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: DependentReducer(external: BlockOperation {}))
        let release = Gate()
        let external = BlockOperation {
            release.wait()
            store.updateState { $0.count = 5 }
        }
        let dependent = makeCounterStore("dependent", reducer: DependentReducer(external: external))
        try dispatcher.register(store: dependent)
        let done = Gate()
        dispatcher.dispatch(CounterAction.increase, mode: .async) { _ in done.open() }
        OperationQueue().addOperation(external)
        release.open()
        #expect(done.wait())
        #expect(dependent.state.count == 1)
        #expect(store.state.count == 5)
    }

    @Test("an ActionOperation also runs in a plain OperationQueue")
    func plainOperationQueue() {
        let store = makeCounterStore()
        let queue = OperationQueue()
        let operations = (0..<10).map { _ in
            ActionOperation(action: CounterAction.increase, store: store) { operation, _, store in
                onNewThread {
                    store.updateState { $0.count += 1 }
                    operation.finish()
                }
            }
        }
        queue.addOperations(operations, waitUntilFinished: true)
        #expect(store.state.count == 10)
        #expect(operations.allSatisfy { $0.isFinished })
        #expect(operations.allSatisfy { $0.isAsynchronous })
    }
}

@Suite("Timeouts")
struct TimeoutTests {
    /// Never finishes unless cancelled.
    final class StuckReducer: Reducer<Counter, CounterAction> {
        override func operation(
            for action: CounterAction,
            in store: Store<Counter, CounterAction>
        ) -> ActionOperation<Counter, CounterAction> {
            ActionOperation(action: action, store: store) { _, _, _ in }
        }
    }

    @Test(
        "a dispatch whose operation never finishes returns timedOut after the timeout",
        arguments: [DispatchMode.sync, .serial, .async, .mainThread]
    )
    func timesOut(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("stuck", reducer: StuckReducer()))
        let result = try #require(
            dispatchAndWait(dispatcher, CounterAction.increase, mode: mode, timeout: .milliseconds(50))
        )
        #expect(result.error?.code == .timedOut)
        #expect(result.error?.message.contains("'stuck'") == true)
        #expect(result.cancelledStores == ["stuck"])
    }

    @Test("a timed-out serial transaction does not block the serial actions after it")
    func serialGoesOn() throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("stuck", reducer: StuckReducer()))
        let counter = makeCounterStore("counter")
        try dispatcher.register(store: counter)
        let done = Countdown(2)
        let results = Shared<[DispatchResult]>([])
        dispatcher.dispatch(CounterAction.increase, mode: .serial, timeout: .milliseconds(50)) {
            results.append($0)
            done.tick()
        }
        dispatcher.dispatch(CounterAction.add(10), to: "counter", mode: .serial) {
            results.append($0)
            done.tick()
        }
        #expect(done.wait())
        #expect(results.current.map { $0.error?.code } == [.timedOut, nil])
        #expect(results.current.first?.handledStores == ["counter"])
        #expect(counter.state.count == 11)
    }

    @Test(
        "after an operation that never finishes timed out, the store's later changes still reach its observers",
        arguments: [DispatchMode.sync, .serial, .async]
    )
    func observersAfterTimeout(mode: DispatchMode) throws {
        /// Changes the state, then never finishes, even when cancelled.
        final class HalfDoneReducer: Reducer<Counter, CounterAction> {
            override func operation(
                for action: CounterAction,
                in store: Store<Counter, CounterAction>
            ) -> ActionOperation<Counter, CounterAction> {
                ActionOperation(action: action, store: store) { _, _, store in
                    store.updateState { $0.count += 1 }
                }
            }
        }
        let dispatcher = Dispatcher()
        let store = makeCounterStore("stuck", reducer: HalfDoneReducer())
        try dispatcher.register(store: store)
        let seen = Shared<[Int]>([])
        let subscription = store.subscribe { state, _ in seen.append(state.count) }

        let result = try #require(
            dispatchAndWait(dispatcher, CounterAction.increase, mode: mode, timeout: .milliseconds(50))
        )
        #expect(result.error?.code == .timedOut)
        // The change the stuck operation made is delivered when the dispatcher abandons it.
        #expect(seen.current == [1])

        store.updateState { $0.count = 10 }
        #expect(seen.current == [1, 10])
        subscription.cancel()
    }

    @Test("a timeout leaves operations that finish in time alone")
    func finishesInTime() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: CounterReducer())
        try dispatcher.register(store: store)
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase, timeout: .seconds(120)))
        #expect(result.succeeded)
    }
}
