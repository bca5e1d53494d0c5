import DispatchStore
import Foundation
import TestSupport
import Testing

/// A state whose value depends on the order of the actions applied to it.
struct Digest: StateType, Equatable {
    var value: UInt64 = 17
    var applied = 0
}

enum DigestAction: ActionType, Equatable {
    case mix(UInt64)
}

/// Non-commutative: applying two actions in the other order gives another value.
final class DigestReducer: Reducer<Digest, DigestAction> {
    override func reduce(_ action: DigestAction, into state: inout Digest) {
        guard case .mix(let input) = action else { return }
        state.value = (state.value &* 31) ^ input
        state.applied += 1
    }
}

@Suite("Sequence numbers: the order each store applied the actions in")
struct SequenceNumberTests {
    @Test("inline reductions number each store's actions 1, 2, 3, in every result and in sequenceNumber")
    func inlineNumbers() throws {
        let dispatcher = Dispatcher()
        let first = makeCounterStore("first")
        let second = makeCounterStore("second")
        try dispatcher.register(store: first)
        try dispatcher.register(store: second)
        #expect(first.sequenceNumber == 0)

        for expected in UInt64(1)...3 {
            let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase))
            #expect(result.outcomes.map(\.sequenceNumber) == [expected, expected])
        }
        let targeted = try #require(dispatchAndWait(dispatcher, CounterAction.increase, to: "second"))
        #expect(targeted.outcomes.map(\.sequenceNumber) == [4])
        #expect(first.sequenceNumber == 3)
        #expect(second.sequenceNumber == 4)
    }

    @Test(
        "an operation finishing later on another thread gets its number when it finishes",
        arguments: [DispatchMode.sync, .async, .serial]
    )
    func numberAtFinish(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: store)
        let result = Shared<DispatchResult?>(nil)
        let done = Gate()
        let numberWhileRunning = Shared<UInt64?>(nil)
        Thread.detachNewThread {
            _ = started.wait()
            numberWhileRunning.withLock { $0 = store.sequenceNumber }
            gate.open()
        }

        dispatcher.dispatch(CounterAction.add(2), mode: mode) { outcome in
            result.withLock { $0 = outcome }
            done.open()
        }
        #expect(done.wait())

        #expect(numberWhileRunning.current == 0)
        #expect(result.current?.outcomes.first?.sequenceNumber == 1)
        #expect(store.sequenceNumber == 1)
        #expect(store.state.count == 2)
    }

    @Test("an operation skipped by a cancellation gets no number, and takes none from the store")
    func cancelledGetsNone() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let result = Shared<DispatchResult?>(nil)
        let done = Gate()
        let cancelling = CancellingMiddleware()
        dispatcher.register(middleware: cancelling)

        dispatcher.dispatch(CounterAction.increase, mode: .sync) { outcome in
            result.withLock { $0 = outcome }
            done.open()
        }

        #expect(done.wait())
        #expect(result.current?.outcomes.map(\.status.isCancelled) == [true])
        #expect(result.current?.outcomes.first?.sequenceNumber == nil)
        #expect(store.sequenceNumber == 0)
    }

    @Test("a failed operation that ran its body has a number: its changes are in the state")
    func failedNumbered() throws {
        struct Broken: Error {}
        final class FailingReducer: Reducer<Counter, CounterAction> {
            override func operation(
                for action: CounterAction,
                in store: Store<Counter, CounterAction>
            ) -> ActionOperation<Counter, CounterAction> {
                ActionOperation(action: action, store: store) { operation, _, store in
                    store.updateState { $0.count += 1 }
                    operation.finish(throwing: Broken())
                }
            }
        }
        let dispatcher = Dispatcher()
        let store = makeCounterStore(reducer: FailingReducer())
        try dispatcher.register(store: store)

        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase))

        #expect(result.hasFailures)
        #expect(result.outcomes.first?.sequenceNumber == 1)
        #expect(store.state.count == 1)
    }

    @Test("updateState outside any operation changes the state without taking a number")
    func updateTakesNone() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        store.updateState { $0.count = 40 }
        let result = try #require(dispatchAndWait(dispatcher, CounterAction.increase))
        #expect(result.outcomes.first?.sequenceNumber == 2)
        #expect(store.state.count == 41)
    }

    @Test(
        "concurrent .async dispatches: replaying each store's actions in its own number order gives its live state",
        arguments: 0..<3
    )
    func replayByNumbers(run: Int) async throws {
        let dispatcher = Dispatcher()
        let identifiers = ["a", "b", "c", "d"]
        let stores = identifiers.map { Store<Digest, DigestAction>(identifier: $0, reducer: DigestReducer()) }
        for store in stores { try dispatcher.register(store: store) }
        let results = Shared<[DispatchResult]>([])
        let threads = 8
        let perThread = 1_000

        await offThePool {
            concurrently(threads) { thread in
                for index in 0..<perThread {
                    let action = DigestAction.mix(UInt64(thread * perThread + index + 1))
                    let target = index % 3 == 0 ? identifiers[(thread + index) % 4] : nil
                    dispatcher.dispatch(action, to: target, mode: .async) { results.append($0) }
                }
            }
        }
        #expect(await dispatcher.waitForIdle(timeout: .seconds(120)))
        let all = results.current
        #expect(all.count == threads * perThread)

        for (position, identifier) in identifiers.enumerated() {
            var applied: [(UInt64, DigestAction)] = []
            for result in all {
                guard let outcome = result.outcomes.first(where: { $0.storeIdentifier == identifier }),
                    let number = outcome.sequenceNumber,
                    let action = result.transaction.action as? DigestAction
                else { continue }
                applied.append((number, action))
            }
            applied.sort { $0.0 < $1.0 }
            let live = stores[position]
            #expect(applied.map(\.0) == Array(1...UInt64(applied.count)), "store \(identifier): numbers 1...n")
            #expect(live.sequenceNumber == UInt64(applied.count))
            var replayed = Digest()
            for (_, action) in applied { DigestReducer().reduce(action, into: &replayed) }
            #expect(replayed == live.state, "store \(identifier)")
        }
    }

    @Test("a recorder's snapshot carries each store's number, consistent with its state")
    func snapshotNumbers() throws {
        let dispatcher = Dispatcher()
        let recorder = RecorderMiddleware()
        dispatcher.register(middleware: recorder)
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        dispatcher.dispatch(CounterAction.add(3), mode: .sync)
        dispatcher.dispatch(CounterAction.add(4), mode: .sync)

        let snapshots = recorder.entries.compactMap { $0.snapshots.first }
        #expect(snapshots.map(\.sequenceNumber) == [0, 1, 2])
        #expect(snapshots.map { ($0.state as? Counter)?.count } == [0, 3, 7])
    }
}

/// Cancels every transaction in `willDispatch`.
private final class CancellingMiddleware: Middleware {
    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        transaction.cancel()
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
}
