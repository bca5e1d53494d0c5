import DispatchStore
import Foundation
import TestSupport
import Testing

/// A dispatcher whose serial lane a gated store can hold up, and a text store reduced inline.
private struct GatedLane {
    let dispatcher = Dispatcher()
    let gate = Gate()
    let started = Gate()
    let gated: Store<Counter, CounterAction>
    let text = Store<Text, TextAction>(identifier: "text", reducer: TextReducer())

    init() throws {
        gated = makeCounterStore("gated", reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: gated)
        try dispatcher.register(store: text)
    }
}

/// Queued transactions run on recycled runs, and a drainer holding the only reference to a run
/// drives it without the run's lock: these tests hold the engine to its promises on that path.
@Suite("Queued runs: reuse and runs nobody else holds")
struct QueuedRunTests {
    @Test(
        "reused runs give each transaction its own action, completion and result, exactly once",
        arguments: [DispatchMode.serial, .async]
    )
    func reusedRunsKeepTransactionsApart(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let count = 3_000
        let results = Shared<[Int: DispatchResult]>([:])
        let done = Countdown(count / 2)
        for index in 0..<count {
            if index % 2 == 0 {
                // Every other run has a completion: a reused run must not keep the previous one.
                dispatcher.dispatch(CounterAction.add(index), mode: mode) { result in
                    results.withLock { $0[index] = result }
                    done.tick()
                }
            } else {
                dispatcher.dispatch(CounterAction.add(index), mode: mode)
            }
        }
        #expect(done.wait())
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(600)))
        #expect(store.state.count == (0..<count).reduce(0, +))
        let collected = results.current
        #expect(collected.count == count / 2)
        for (index, result) in collected {
            #expect(result.transaction.action as? CounterAction == .add(index))
            #expect(result.handledStores == ["counter"])
            #expect(result.outcomes.first?.sequenceNumber ?? 0 > 0)
        }
        #expect(Set(collected.values.map(\.transaction.id)).count == count / 2)
    }

    @Test(
        "a queued transaction the caller keeps names its stores after it finished, while the lane reuses runs",
        arguments: [DispatchMode.serial, .async]
    )
    func keptTransactionsKeepTheirStores(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore("counter"))
        try dispatcher.register(store: makeCounterStore("totals", waitsFor: ["counter"]))
        try dispatcher.register(store: Store<Text, TextAction>(identifier: "text", reducer: TextReducer()))
        // Every tenth transaction is kept; the others are released at once, so their runs are reused.
        var kept: [(index: Int, transaction: Transaction)] = []
        for index in 0..<2_000 {
            let transaction =
                index.isMultiple(of: 3)
                ? dispatcher.dispatch(TextAction.append("x"), mode: mode)
                : dispatcher.dispatch(CounterAction.add(1), mode: mode)
            if index.isMultiple(of: 10) { kept.append((index, transaction)) }
        }
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(600)))
        // Runs freed by the released transactions were reused meanwhile; more dispatches reuse them again.
        for _ in 0..<500 {
            dispatcher.dispatch(TextAction.append("y"), mode: mode)
        }
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(600)))
        for (index, transaction) in kept {
            let expected = index.isMultiple(of: 3) ? ["text"] : ["counter", "totals"]
            #expect(transaction.storeIdentifiers == expected, "transaction \(index)")
            #expect(transaction.description.contains(expected.joined(separator: ", ")))
            // Cancelling a finished transaction does nothing, even once its run could have been reused.
            transaction.cancel()
        }
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(600)))
    }

    @Test(
        "an action too large to box inline is the same in the transaction returned, the middleware's and the result",
        arguments: [DispatchMode.sync, .async, .serial, .mainThread]
    )
    func largeActionsKeepTheirValue(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let log = EventLog()
        dispatcher.register(middleware: log)
        try dispatcher.register(store: Store<Ledger, Entry>(identifier: "ledger", reducer: LedgerReducer()))
        let entries = (0..<200).map { Entry(account: "account \($0)", amounts: [$0, $0 + 1], cents: $0 * 100) }
        #expect(MemoryLayout<Entry>.size > 3 * MemoryLayout<Int>.size)
        let results = Shared<[UInt64: DispatchResult]>([:])
        let done = Countdown(entries.count)
        var returned: [Transaction] = []
        for entry in entries {
            returned.append(
                dispatcher.dispatch(entry, mode: mode) { result in
                    results.withLock { $0[result.transaction.id] = result }
                    done.tick()
                }
            )
        }
        #expect(done.wait())
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(600)))
        let collected = results.current
        for (entry, transaction) in zip(entries, returned) {
            #expect(transaction.action as? Entry == entry)
            #expect(transaction.storeIdentifiers == ["ledger"])
            #expect(collected[transaction.id]?.transaction.action as? Entry == entry)
        }
        let seen = log.results.current.compactMap { $0.transaction.action as? Entry }
        #expect(seen.sorted { $0.cents < $1.cents } == entries)
    }

    @Test("a queued transaction cancelled, then released before its drainer reaches it, is skipped")
    func cancelledThenReleased() throws {
        let fixture = try GatedLane()
        let (dispatcher, gated, text) = (fixture.dispatcher, fixture.gated, fixture.text)
        // Completed runs go back to the lane, so the next dispatches run on reused runs.
        for _ in 0..<300 {
            dispatcher.dispatch(TextAction.append(""), mode: .serial)
        }
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(600)))

        let results = Shared<[String: DispatchResult]>([:])
        let done = Countdown(3)
        func record(_ name: String) -> @Sendable (DispatchResult) -> Void {
            { result in
                results.withLock { $0[name] = result }
                done.tick()
            }
        }
        // The serial lane waits for this operation, so nothing after it is driven yet.
        dispatcher.dispatch(CounterAction.add(1), mode: .serial, then: record("gated"))
        #expect(fixture.started.wait())
        // Cancelled, and its transaction released when this call returns: the drainer will then
        // hold the only reference to the run.
        func dispatchCancelled() {
            dispatcher.dispatch(TextAction.append("x"), mode: .serial, then: record("cancelled")).cancel()
        }
        dispatchCancelled()
        dispatcher.dispatch(TextAction.append("y"), mode: .serial, then: record("after"))
        fixture.gate.open()

        #expect(done.wait())
        #expect(text.state.value == "y")
        #expect(gated.state.count == 1)
        #expect(results.current["gated"]?.wasCancelled == false)
        #expect(results.current["cancelled"]?.cancelledStores == ["text"])
        #expect(results.current["after"]?.handledStores == ["text"])
        #expect(results.current["after"]?.wasCancelled == false)
    }

    @Test("a run nobody else holds, whose operation finishes on another thread, completes once; the lane goes on")
    func runDrivenAloneResumes() throws {
        let fixture = try GatedLane()
        let (dispatcher, gated, text) = (fixture.dispatcher, fixture.gated, fixture.text)
        let completions = Shared<[String]>([])
        let done = Countdown(201)
        dispatcher.dispatch(CounterAction.add(5), mode: .serial) { result in
            completions.append(result.wasCancelled ? "gated cancelled" : "gated")
            done.tick()
        }
        for index in 0..<200 {
            dispatcher.dispatch(TextAction.append("."), mode: .serial) { _ in
                completions.append("text \(index)")
                done.tick()
            }
        }
        #expect(fixture.started.wait())
        fixture.gate.open()

        #expect(done.wait())
        #expect(gated.state.count == 5)
        #expect(text.state.value == String(repeating: ".", count: 200))
        // Strict FIFO: the gated transaction first, then the others in order, each once.
        #expect(completions.current == ["gated"] + (0..<200).map { "text \($0)" })
    }
}

/// An action larger than an existential's inline buffer (three words), so that it is boxed on the heap.
private struct Entry: ActionType, Equatable {
    let account: String
    let amounts: [Int]
    let cents: Int
}

private struct Ledger: StateType {
    var total = 0
}

private final class LedgerReducer: Reducer<Ledger, Entry> {
    override func reduce(_ action: Entry, into state: inout Ledger) {
        state.total += action.cents
    }
}
