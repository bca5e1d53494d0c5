import DispatchStore
import Foundation
import TestSupport
import Testing

/// A key set on the main queue by the tests, to tell whether code runs on it.
private let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

private var isOnMainQueue: Bool {
    DispatchQueue.getSpecific(key: mainQueueKey) == true || Thread.isMainThread
}

/// Records the thread facts of every operation it runs.
private final class ProbeReducer: Reducer<Counter, CounterAction> {
    let onMain = Shared<[Bool]>([])
    /// The threads the operations ran on.
    let threads = Shared<[ObjectIdentifier]>([])

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { [onMain, threads] operation, _, store in
            onMain.append(isOnMainQueue)
            threads.append(ObjectIdentifier(Thread.current))
            store.updateState { $0.count += 1 }
            operation.finish()
        }
    }
}

/// Logs the start and the end of each operation; each finishes on its own thread after `delay(i)`.
private final class OutOfOrderReducer: Reducer<Counter, CounterAction> {
    let log = Shared<[String]>([])

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let log = log
        return ActionOperation(action: action, store: store) { operation, action, store in
            guard case .add(let index) = action else { return }
            log.append("start \(index)")
            onNewThread {
                // Uneven amounts of work, so that a non-serial queue would interleave.
                var spin = 0
                for _ in 0..<((index * 7_919) % 20_000) { spin &+= 1 }
                store.updateState { $0.count = spin == -1 ? 0 : index }
                log.append("end \(index)")
                operation.finish()
            }
        }
    }
}

@Suite("Dispatch modes")
struct DispatchModeTests {
    @Test(".async returns before the operations finish")
    func asyncReturnsAtOnce() throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: store)
        let done = Gate()
        dispatcher.dispatch(CounterAction.increase) { _ in done.open() }
        #expect(started.wait())
        #expect(store.state.count == 0)
        #expect(!done.isOpen)
        gate.open()
        #expect(done.wait())
        #expect(store.state.count == 1)
    }

    @Test(".async runs independent transactions in parallel")
    func asyncIsConcurrent() throws {
        final class RendezvousReducer: Reducer<Counter, CounterAction> {
            let arrived = Countdown(2)
            override func operation(
                for action: CounterAction,
                in store: Store<Counter, CounterAction>
            ) -> ActionOperation<Counter, CounterAction> {
                let arrived = arrived
                return ActionOperation(action: action, store: store) { operation, _, store in
                    arrived.tick()
                    // Both operations must be running at once for either to get past this.
                    let together = arrived.wait(seconds: 600)
                    store.updateState { $0.count += together ? 1 : 0 }
                    operation.finish()
                }
            }
        }
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: RendezvousReducer())
        try dispatcher.register(store: store)
        let done = Countdown(2)
        dispatcher.dispatch(CounterAction.increase) { _ in done.tick() }
        dispatcher.dispatch(CounterAction.increase) { _ in done.tick() }
        #expect(done.wait())
        #expect(store.state.count == 2)
    }

    @Test(".sync returns after the operations finished, the observers ran and the completion ran")
    func syncWaitsForEverything() throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let stores = [
            makeCounterStore("a", reducer: GatedCounterReducer(gate: gate, started: started)),
            makeCounterStore("b"),
        ]
        for store in stores {
            try dispatcher.register(store: store)
        }
        let observed = Shared<[Int]>([])
        let subscriptions = stores.map { store in store.subscribe { state, _ in observed.append(state.count) } }
        let completed = Shared(false)
        onNewThread {
            started.wait()
            gate.open()
        }
        dispatcher.dispatch(CounterAction.add(3), mode: .sync) { _ in completed.withLock { $0 = true } }
        #expect(stores.map(\.state.count) == [3, 3])
        #expect(observed.current == [3, 3])
        #expect(completed.current)
        _ = subscriptions
    }

    @Test(".sync called from inside an operation does not deadlock", arguments: [DispatchMode.sync, .serial, .async])
    func syncInsideOperation(outer: DispatchMode) throws {
        final class NestingReducer: Reducer<Counter, CounterAction> {
            let dispatcher: Dispatcher
            init(dispatcher: Dispatcher) { self.dispatcher = dispatcher }
            override func operation(
                for action: CounterAction,
                in store: Store<Counter, CounterAction>
            ) -> ActionOperation<Counter, CounterAction> {
                let dispatcher = dispatcher
                return ActionOperation(action: action, store: store) { operation, _, store in
                    dispatcher.dispatch(TextAction.append("inner"), mode: .sync)
                    store.updateState { $0.count += 1 }
                    operation.finish()
                }
            }
        }
        let dispatcher = Dispatcher()
        let counter = makeCounterStore(reducer: NestingReducer(dispatcher: dispatcher))
        let text = Store<Text, TextAction>(identifier: "text", reducer: TextReducer())
        try dispatcher.register(store: counter)
        try dispatcher.register(store: text)
        #expect(dispatchAndWait(dispatcher, CounterAction.increase, mode: outer)?.succeeded == true)
        #expect(counter.state.count == 1)
        #expect(text.state.value == "inner")
    }

    @Test(".sync from inside an observer does not deadlock and keeps every observer in commit order")
    func syncInsideObserver() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let log = Shared<[String]>([])
        let first = store.subscribe { state, _ in
            log.append("first \(state.count)")
            if state.count == 1 { dispatcher.dispatch(CounterAction.increase, mode: .sync) }
        }
        let second = store.subscribe { state, _ in log.append("second \(state.count)") }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(store.state.count == 2)
        #expect(log.current == ["first 1", "second 1", "first 2", "second 2"])
        _ = (first, second)
    }

    @Test(".sync on the main thread does not deadlock, even when an operation finishes on another thread")
    @MainActor
    func syncOnMainThread() throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate))
        try dispatcher.register(store: store)
        onNewThread { gate.open() }
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(store.state.count == 1)
    }

    @Test(".serial is strict FIFO even when operations finish out of order on other threads")
    func serialFIFO() throws {
        let dispatcher = Dispatcher()
        let reducer = OutOfOrderReducer()
        let store = makeCounterStore(reducer: reducer)
        try dispatcher.register(store: store)
        let completions = Shared<[Int]>([])
        let done = Countdown(200)
        for index in 0..<200 {
            dispatcher.dispatch(CounterAction.add(index), mode: .serial) { _ in
                completions.append(index)
                done.tick()
            }
        }
        #expect(done.wait())
        let expected = (0..<200).flatMap { ["start \($0)", "end \($0)"] }
        #expect(reducer.log.current == expected)
        #expect(completions.current == Array(0..<200))
        #expect(store.state.count == 199)
    }

    @Test(".serial waits for an earlier operation that is not ready (dependencies of its own)")
    func serialWaitsForNotReady() throws {
        final class DependentReducer: Reducer<Counter, CounterAction> {
            let external: BlockOperation
            let log: Shared<[String]>
            init(external: BlockOperation, log: Shared<[String]>) {
                self.external = external
                self.log = log
            }
            override func operation(
                for action: CounterAction,
                in store: Store<Counter, CounterAction>
            ) -> ActionOperation<Counter, CounterAction> {
                let log = log
                let operation = ActionOperation(action: action, store: store) { operation, action, store in
                    log.append("run \(action)")
                    store.updateState { $0.count += 1 }
                    operation.finish()
                }
                if action == .add(0) { operation.addDependency(external) }
                return operation
            }
        }
        let dispatcher = Dispatcher()
        let log = Shared<[String]>([])
        let release = Gate()
        let external = BlockOperation {
            release.wait()
            log.append("external")
        }
        let store = makeCounterStore(reducer: DependentReducer(external: external, log: log))
        try dispatcher.register(store: store)
        let done = Countdown(2)
        dispatcher.dispatch(CounterAction.add(0), mode: .serial) { _ in done.tick() }
        dispatcher.dispatch(CounterAction.add(1), mode: .serial) { _ in done.tick() }
        // Let other dispatcher work happen meanwhile, then release the dependency.
        for _ in 0..<50 {
            dispatchAndWait(dispatcher, CounterAction.increase, to: "counter", mode: .async)
        }
        let queue = OperationQueue()
        queue.addOperation(external)
        release.open()
        #expect(done.wait())
        #expect(log.current.filter { !$0.contains("increase") } == ["external", "run add(0)", "run add(1)"])
    }

    @Test(".mainThread runs the operations on the main queue when dispatched from another thread")
    func mainThreadFromBackground() throws {
        let dispatcher = Dispatcher()
        let reducer = ProbeReducer()
        let store = makeCounterStore(reducer: reducer)
        try dispatcher.register(store: store)
        let onMainAtCompletion = Shared<[Bool]>([])
        let done = Countdown(20)
        concurrently(2) { _ in
            for _ in 0..<10 {
                dispatcher.dispatch(CounterAction.increase, mode: .mainThread) { _ in
                    onMainAtCompletion.append(isOnMainQueue)
                    done.tick()
                }
            }
        }
        #expect(done.wait())
        #expect(reducer.onMain.current == Array(repeating: true, count: 20))
        #expect(onMainAtCompletion.current == Array(repeating: true, count: 20))
        #expect(store.state.count == 20)
    }

    @Test(".mainThread runs inline when the caller is already on the main queue")
    @MainActor
    func mainThreadInline() throws {
        let dispatcher = Dispatcher()
        let reducer = ProbeReducer()
        let store = makeCounterStore(reducer: reducer)
        try dispatcher.register(store: store)
        let completed = Shared(false)
        dispatcher.dispatch(CounterAction.increase, mode: .mainThread) { _ in completed.withLock { $0 = true } }
        #expect(store.state.count == 1)
        #expect(completed.current)
        #expect(reducer.threads.current == [ObjectIdentifier(Thread.current)])
    }

    @Test("waitUntilIdle on the main queue runs the queued .mainThread work instead of waiting forever")
    @MainActor
    func waitUntilIdleOnMain() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let queued = Gate()
        onNewThread {
            dispatcher.dispatch(CounterAction.increase, mode: .mainThread)
            queued.open()
        }
        #expect(queued.wait())
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
        #expect(store.state.count == 1)
    }
}
