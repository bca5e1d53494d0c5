import DispatchStore
import Foundation
import TestSupport
import Testing

@Suite("Async API: perform")
struct PerformTests {
    @Test(
        "perform returns the result once every store finished and its observers ran",
        arguments: [
            DispatchMode.async, .serial, .sync, .mainThread,
        ]
    )
    func performWaitsForTheEnd(mode: DispatchMode) async throws {
        let dispatcher = Dispatcher()
        let counter = makeCounterStore("counter", reducer: CounterReducer())
        let totals = makeCounterStore("totals", waitsFor: ["counter"])
        try dispatcher.register(store: counter)
        try dispatcher.register(store: totals)
        let seen = Shared<[Int]>([])
        let subscription = totals.subscribe { state, _ in seen.append(state.count) }

        let result = await dispatcher.perform(CounterAction.add(3), mode: mode)

        #expect(result.succeeded)
        #expect(result.handledStores == ["counter", "totals"])
        #expect(result.transaction.mode == mode)
        #expect(counter.state.count == 3)
        #expect(seen.current == [3])
        subscription.cancel()
    }

    @Test("perform to one store by identifier, and an unknown identifier is reported")
    func performToIdentifier() async throws {
        let dispatcher = Dispatcher()
        let first = makeCounterStore("first")
        let second = makeCounterStore("second")
        try dispatcher.register(store: first)
        try dispatcher.register(store: second)

        let result = await dispatcher.perform(CounterAction.increase, to: "second")
        let unknown = await dispatcher.perform(CounterAction.increase, to: "third")

        #expect(result.handledStores == ["second"])
        #expect((first.state.count, second.state.count) == (0, 1))
        #expect(unknown.error?.code == .unknownStore)
        #expect(unknown.error?.storeIdentifier == "third")
    }

    @Test(
        "cancelling the awaiting task cancels the transaction and the result says so",
        arguments: [DispatchMode.serial, .async, .sync]
    )
    func cancellingTheTaskCancelsTheTransaction(mode: DispatchMode) async throws {
        let dispatcher = Dispatcher()
        let reducer = CancellableCounterReducer()
        try dispatcher.register(store: makeCounterStore("slow", reducer: reducer))
        let follower = makeCounterStore("follower", waitsFor: ["slow"])
        try dispatcher.register(store: follower)
        let returned = Gate()

        let task = Task {
            let result = await dispatcher.perform(CounterAction.increase, mode: mode)
            returned.open()
            return result
        }
        #expect(await reducer.started.wait())
        task.cancel()
        // A `.sync` perform used to block its thread until the operation finished on its own.
        guard await returned.wait() else {
            Issue.record("perform(mode: \(mode)) did not return after its task was cancelled")
            return
        }
        let result = await task.value

        #expect(result.wasCancelled)
        #expect(result.cancelledStores == ["slow", "follower"])
        #expect(!result.succeeded)
        #expect(follower.state.count == 0)
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
    }

    @Test(
        "a task cancelled before perform makes one transaction in which every store is cancelled",
        arguments: [
            DispatchMode.async, .serial, .sync,
        ]
    )
    func alreadyCancelledTask(mode: DispatchMode) async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let log = EventLog()
        dispatcher.register(middleware: log)

        let result = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await dispatcher.perform(CounterAction.increase, mode: mode)
        }.value

        #expect(result.cancelledStores == ["counter"])
        #expect(store.state.count == 0)
        let id = result.transaction.id
        #expect(log.events.current == ["will \(id) counter", "did \(id) counter", "finish \(id)"])
    }

    @Test("a .sync perform whose operation runs on suspends the task instead of blocking its thread")
    func syncPerformSuspends() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        // As many performs as the cooperative pool has threads: blocking, they would hold them all.
        let width = ProcessInfo.processInfo.activeProcessorCount
        let started = Countdown(width)
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: store)
        // A thread outside the pool opens the gate if this test's task cannot run again (a failure).
        let resumed = Gate()
        let rescued = Shared(false)
        Thread.detachNewThread {
            if !resumed.wait() {
                rescued.withLock { $0 = true }
                gate.open()
            }
        }
        let performing = (0..<width).map { _ in
            Task { await dispatcher.perform(CounterAction.add(2), mode: .sync) }
        }
        #expect(await started.wait())

        resumed.open()
        gate.open()
        var results: [DispatchResult] = []
        for task in performing { results.append(await task.value) }

        #expect(!rescued.current, "the performing tasks held every thread of the pool")
        #expect(results.allSatisfy { $0.succeeded && $0.transaction.mode == .sync })
        #expect(Set(results.compactMap { $0.outcomes.first?.sequenceNumber }) == Set(1...UInt64(width)))
        #expect(store.state.count == 2 * width)
    }

    @Test("perform after shutdown returns a shutDown error and reaches no store")
    func performAfterShutdown() async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        await dispatcher.shutdown()

        let result = await dispatcher.perform(CounterAction.increase)

        #expect(result.error?.code == .shutDown)
        #expect(result.outcomes.isEmpty)
        #expect(store.state.count == 0)
    }

    @Test("registering a store after shutdown throws shutDown naming it, and the store stays free")
    func registerAfterShutdown() async throws {
        let dispatcher = Dispatcher()
        await dispatcher.shutdown()
        let late = makeCounterStore("late")

        let error = #expect(throws: DispatchError.self) { try dispatcher.register(store: late) }

        #expect(error?.code == .shutDown)
        #expect(error?.storeIdentifier == "late")
        #expect(error?.message.contains("'late'") == true)
        #expect(dispatcher.stores.isEmpty)
        let other = Dispatcher()
        try other.register(store: late)
        other.dispatch(CounterAction.increase, mode: .sync)
        #expect(late.state.count == 1)
    }
}

@Suite("Async API: state streams")
struct StateStreamTests {
    @Test("states yields the current state, then every commit in order, and ends when the store is unregistered")
    func streamYieldsEveryStateInOrder() async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        dispatcher.dispatch(CounterAction.add(10), mode: .sync)
        let states = store.states()

        for _ in 0..<50 {
            dispatcher.dispatch(CounterAction.increase, mode: .serial)
        }
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
        store.updateState { $0.count = 100 }
        dispatcher.unregister(identifier: "counter")
        dispatcher.dispatch(CounterAction.increase, mode: .sync)  // reaches no store now

        var received: [Int] = []
        for await state in states {
            received.append(state.count)
        }
        #expect(received == Array(10...60) + [100])
    }

    @Test("a consumer that falls behind gets the newest states, up to the limit")
    func boundedBufferKeepsTheNewest() async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let states = store.states(bufferingNewest: 3)

        for _ in 0..<10 {
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
        }
        dispatcher.unregister(identifier: "counter")

        var received: [Int] = []
        for await state in states {
            received.append(state.count)
        }
        #expect(received == [8, 9, 10])
    }

    @Test("a stream started while changes wait for delivery does not repeat them")
    func streamSkipsChangesQueuedBeforeIt() async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let entered = Gate()
        let release = Gate()
        let subscription = store.subscribe { state, _ in
            if state.count == 1 {
                entered.open()
                #expect(release.wait())
            }
        }
        // The first change's delivery blocks in the observer; the second one's waits behind it.
        onNewThread { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        #expect(await entered.wait())
        let committed = Gate()
        let second = store.subscribe(\.count) { count in if count == 2 { committed.open() } }
        onNewThread { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        #expect(await eventually { store.state.count == 2 })

        let states = store.states()
        release.open()
        #expect(await committed.wait())
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.unregister(identifier: "counter")

        var received: [Int] = []
        for await state in states {
            received.append(state.count)
        }
        #expect(received == [2, 3])
        subscription.cancel()
        second.cancel()
    }

    @Test("cancelling the consuming task ends the iteration")
    func cancellingTheConsumerEndsTheStream() async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let first = Gate()
        let consumer = Task {
            var count = 0
            for await _ in store.states() {
                count += 1
                first.open()
            }
            return count
        }
        #expect(await first.wait())
        consumer.cancel()
        #expect(await consumer.value >= 1)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(store.state.count == 1)
    }
}

@Suite("Async API: idleness and shutdown")
struct ShutdownTests {
    @Test("waitUntilIdle times out while work is in flight and returns true once it ended")
    func waitUntilIdleAsync() async throws {
        let dispatcher = Dispatcher()
        let reducer = CancellableCounterReducer()
        try dispatcher.register(store: makeCounterStore(reducer: reducer))
        let transaction = dispatcher.dispatch(CounterAction.increase, mode: .async)
        #expect(await reducer.started.wait())

        #expect(await dispatcher.waitForIdle(timeout: .milliseconds(50)) == false)
        transaction.cancel()
        #expect(await dispatcher.waitForIdle())
    }

    @Test("a cancelled task stops waiting for idleness")
    func cancelledIdleWait() async throws {
        let dispatcher = Dispatcher()
        let reducer = CancellableCounterReducer()
        try dispatcher.register(store: makeCounterStore(reducer: reducer))
        let transaction = dispatcher.dispatch(CounterAction.increase, mode: .serial)
        #expect(await reducer.started.wait())

        let waiter = Task { await dispatcher.waitForIdle() }
        waiter.cancel()
        #expect(await waiter.value == false)
        transaction.cancel()
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
    }

    @Test("shutdown drains what is in flight, rejects new actions, and reports both")
    func shutdownDrains() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: store)
        let log = EventLog()
        dispatcher.register(middleware: log)
        let completions = Shared<[DispatchResult]>([])
        for _ in 0..<3 {
            dispatcher.dispatch(CounterAction.increase, mode: .serial) { completions.append($0) }
        }
        #expect(await started.wait())

        let shutdown = Task { await dispatcher.shutdown() }
        #expect(await eventually { dispatcher.isShutDown })
        let rejected = dispatchAndWait(dispatcher, CounterAction.add(100), mode: .async)
        gate.open()
        let report = await shutdown.value

        #expect(report.finished == 3)
        #expect(report.cancelled == 0)
        #expect(report.rejected == 1)
        #expect(report.isIdle && !report.timedOut)
        #expect(store.state.count == 3)
        #expect(completions.current.count == 3)
        #expect(completions.current.allSatisfy { $0.succeeded })
        let rejection = try #require(rejected)
        #expect(rejection.error?.code == .shutDown)
        #expect(rejection.outcomes.isEmpty)
        #expect(log.results.current.map(\.transaction.id).contains(rejection.transaction.id))
    }

    @Test("shutdown(.cancel) cancels the running and the queued transactions; each still finishes once")
    func shutdownCancels() async throws {
        let dispatcher = Dispatcher()
        let reducer = CancellableCounterReducer()
        let store = makeCounterStore(reducer: reducer)
        try dispatcher.register(store: store)
        let completions = Shared<[DispatchResult]>([])
        for _ in 0..<3 {
            dispatcher.dispatch(CounterAction.increase, mode: .serial) { completions.append($0) }
        }
        #expect(await reducer.started.wait())

        let report = await dispatcher.shutdown(.cancel)

        #expect(report.finished == 3)
        #expect(report.cancelled == 3)
        #expect(report.isIdle)
        #expect(completions.current.count == 3)
        #expect(completions.current.allSatisfy { $0.cancelledStores == ["counter"] })
        #expect(await reducer.started.wait())  // only the first one ever started
    }

    @Test("shutdown cancels what is still running when its timeout passes")
    func shutdownTimeout() async throws {
        let dispatcher = Dispatcher()
        let reducer = CancellableCounterReducer()
        try dispatcher.register(store: makeCounterStore(reducer: reducer))
        let result = Shared<DispatchResult?>(nil)
        dispatcher.dispatch(CounterAction.increase, mode: .async) { outcome in result.withLock { $0 = outcome } }
        #expect(await reducer.started.wait())

        let report = await dispatcher.shutdown(timeout: .milliseconds(100))

        #expect(report.timedOut)
        #expect(report.cancelled == 1)
        #expect(report.finished == 1)
        #expect(report.isIdle)
        #expect(result.current?.wasCancelled == true)
        #expect(report.description.contains("timed out"))
    }

    @Test(
        "shutdown with a timeout finishes a transaction whose operation ignores cancellation, once, before it returns",
        arguments: [DispatchMode.async, .serial]
    )
    func shutdownGivesUp(mode: DispatchMode) async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        // Ignores cancellation: finishes only when the gate opens, after the shutdown.
        let stuck = makeCounterStore("stuck", reducer: GatedCounterReducer(gate: gate, started: started))
        let counter = makeCounterStore("counter")
        try dispatcher.register(store: stuck)
        try dispatcher.register(store: counter)
        let results = Shared<[DispatchResult]>([])
        dispatcher.dispatch(CounterAction.increase, to: "stuck", mode: mode) { results.append($0) }
        dispatcher.dispatch(CounterAction.increase, to: "counter", mode: mode) { results.append($0) }
        #expect(await started.wait())

        let report = await dispatcher.shutdown(timeout: .milliseconds(100))

        #expect(report.timedOut)
        #expect(report.abandoned == 1)
        #expect(report.isIdle)
        #expect(report.description.contains("1 abandoned"))
        let ended = results.current
        #expect(ended.count == 2)
        let abandoned = try #require(ended.first { $0.transaction.targetIdentifier == "stuck" })
        #expect(abandoned.cancelledStores == ["stuck"])
        #expect(abandoned.error?.code == .timedOut)
        #expect(abandoned.error?.message.contains("'stuck'") == true)

        // The operation finishing now reaches no completion a second time; its change, made outside
        // any operation the store still counts, reaches the observers.
        let changed = Gate()
        let subscription = stuck.subscribe { state, action in
            if state.count == 1 && action == nil { changed.open() }
        }
        gate.open()
        #expect(await changed.wait())
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
        #expect(results.current.count == 2)
        subscription.cancel()
    }

    @Test(
        "after shutdown every mode reports the rejection exactly once",
        arguments: [
            DispatchMode.async, .serial, .sync, .mainThread,
        ]
    )
    func rejectionInEveryMode(mode: DispatchMode) async throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let empty = await dispatcher.shutdown()
        #expect(empty.finished == 0 && empty.rejected == 0 && empty.isIdle)

        let calls = Shared(0)
        let done = Gate()
        let transaction = dispatcher.dispatch(CounterAction.increase, mode: mode) { result in
            #expect(result.error?.code == .shutDown)
            #expect(result.error?.message.contains("increase") == true)
            calls.increment()
            done.open()
        }
        #expect(await done.wait())
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
        #expect(calls.current == 1)
        #expect(transaction.storeIdentifiers.isEmpty)
        #expect(store.state.count == 0)
        #expect(dispatcher.isShutDown)
        let again = await dispatcher.shutdown()
        #expect(again.rejected == 1)
    }
}
