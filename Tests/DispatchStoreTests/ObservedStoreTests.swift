#if canImport(Observation)
import DispatchStore
import Foundation
import Observation
import TestSupport
import Testing

/// A key set on the main queue, to tell whether code runs on it.
private let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
}()

private var isOnMainQueue: Bool {
    DispatchQueue.getSpecific(key: mainQueueKey) == true || Thread.isMainThread
}

/// Suspends until the main queue has run every block enqueued before this call.
///
/// The observed store's updates are enqueued on the main queue, which runs its blocks in order:
/// once a block enqueued after them runs, they have run.
private func mainQueueTurn() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.main.async { continuation.resume() }
    }
}

/// Counts the changes of an observed store's `state` as Observation reports them, re-tracking after
/// each one from inside the change, so that none is missed.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor
private final class ChangeCounter: Sendable {
    let observed: ObservedStore<Counter, CounterAction>
    let changes = Shared(0)
    let onMain = Shared<[Bool]>([])

    init(_ observed: ObservedStore<Counter, CounterAction>) {
        self.observed = observed
        track()
    }

    private func track() {
        withObservationTracking {
            _ = observed.state
        } onChange: { [self] in
            changes.increment()
            onMain.append(isOnMainQueue)
            // `onChange` runs inside the update, on the main actor: track the next change at once.
            MainActor.assumeIsolated { track() }
        }
    }
}

// Swift Testing takes no `@available` on suites and tests: each test checks availability itself.
@Suite("ObservedStore")
struct ObservedStoreTests {
    @Test("state starts as the store's and follows each commit, updated on the main actor")
    @MainActor
    func followsCommits() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: CounterReducer())
        store.updateState { $0.count = 7 }
        try dispatcher.register(store: store)
        let observed = ObservedStore(store)
        #expect(observed.state.count == 7)
        #expect(observed.store === store)
        let counter = ChangeCounter(observed)

        await dispatcher.perform(CounterAction.add(2))
        await mainQueueTurn()
        #expect(observed.state.count == 9)
        #expect(counter.changes.current == 1)

        // Changes outside any operation reach it too.
        store.updateState { $0.count = 100 }
        await mainQueueTurn()
        #expect(observed.state.count == 100)
        #expect(counter.changes.current == 2)
        #expect(counter.onMain.current == [true, true])
    }

    @Test("a burst of commits made during one main-queue turn sets state once, to the latest")
    @MainActor
    func coalescesBurstOnMain() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let observed = ObservedStore(store)
        let counter = ChangeCounter(observed)
        // 100 commits while the main actor is busy with this test: their observers run here.
        for _ in 0..<100 {
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
        }
        // The update comes in a later turn, not during the dispatches.
        #expect(observed.state.count == 0)
        #expect(counter.changes.current == 0)
        await mainQueueTurn()
        #expect(observed.state.count == 100)
        #expect(counter.changes.current == 1)
        // Nothing else was scheduled.
        await mainQueueTurn()
        #expect(counter.changes.current == 1)
    }

    @Test("commits from other threads are coalesced and the latest state always arrives")
    @MainActor
    func burstFromOtherThreads() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: CounterReducer())
        try dispatcher.register(store: store)
        let observed = ObservedStore(store)
        let counter = ChangeCounter(observed)
        let commits = 2_000
        let done = Countdown(commits)
        // The main actor stays free meanwhile: updates may run between commits.
        await offThePool {
            concurrently(4) { _ in
                for _ in 0..<(commits / 4) {
                    dispatcher.dispatch(CounterAction.increase, mode: .async) { _ in done.tick() }
                }
            }
            done.wait()
        }
        // Every observer ran before its completion, so every update is queued by now.
        await mainQueueTurn()
        #expect(observed.state.count == commits)
        #expect(counter.changes.current >= 1)
        #expect(counter.changes.current <= commits)
        #expect(counter.onMain.current.allSatisfy { $0 })
    }

    @Test("a recorder restore reaches the observed state")
    @MainActor
    func restore() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let recorder = RecorderMiddleware(limit: 10)
        dispatcher.register(middleware: recorder)
        let observed = ObservedStore(store)
        dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        await mainQueueTurn()
        #expect(observed.state.count == 5)
        #expect(recorder.previous())
        await mainQueueTurn()
        #expect(observed.state.count == 0)
    }

    @Test("releasing the observed store ends its observation; a pending update finds it gone")
    @MainActor
    func release() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        var observed: ObservedStore<Counter, CounterAction>? = ObservedStore(store)
        weak let released = observed
        // An update is pending when the last reference goes.
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        observed = nil
        #expect(released == nil)
        await mainQueueTurn()
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        await mainQueueTurn()
        #expect(store.state.count == 2)
    }
}
#endif
