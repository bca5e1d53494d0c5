import Foundation
import TestSupport
import Testing

@testable import DispatchStore

/// A middleware that keeps every transaction it is shown.
private final class TransactionKeeper: Middleware {
    let kept = Shared<[Transaction]>([])

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        kept.append(transaction)
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
}

@Suite("A thread reuses its .sync runs")
struct SyncRunReuseTests {
    /// The run the calling thread keeps for `.sync` dispatches at nesting level `level`, if any.
    private static func keptRun(level: Int) -> ObjectIdentifier? {
        ThreadContext.current.syncRuns[level].map(ObjectIdentifier.init)
    }

    /// Runs `body` on a thread of its own (a fresh context) and returns what it returns.
    private static func onFreshThread<Result: Sendable>(_ body: @escaping @Sendable () -> Result) -> Result? {
        let result = Shared<Result?>(nil)
        let done = Gate()
        onNewThread {
            result.withLock { $0 = body() }
            done.open()
        }
        return done.wait() ? result.current : nil
    }

    @Test("consecutive .sync dispatches on one thread drive the same run, and leave no level taken")
    func oneRunPerThread() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let seen = try #require(
            Self.onFreshThread { () -> [ObjectIdentifier?] in
                var seen: [ObjectIdentifier?] = [Self.keptRun(level: 0)]
                for _ in 0..<100 {
                    // A completion: a `.sync` dispatch nobody reads takes a shortcut and no run.
                    dispatcher.dispatch(CounterAction.increase, mode: .sync) { _ in }
                    seen.append(Self.keptRun(level: 0))
                }
                #expect(ThreadContext.current.syncDepth == 0)
                return seen
            }
        )
        #expect(seen.first == .some(nil), "a new thread keeps no run")
        #expect(seen[1] != nil)
        #expect(Set(seen.dropFirst()).count == 1, "every dispatch after the first reused the first one's run")
        #expect(store.state.count == 100)
    }

    @Test("a .sync dispatch made by an observer during a .sync dispatch drives the next level's run")
    func nestedLevels() throws {
        let dispatcher = Dispatcher()
        let outer = makeCounterStore("outer")
        let inner = Store<Text, TextAction>(identifier: "inner", reducer: TextReducer())
        try dispatcher.register(store: outer)
        try dispatcher.register(store: inner)
        let subscription = outer.subscribe { _, _ in
            dispatcher.dispatch(TextAction.append("x"), mode: .sync) { _ in }
        }
        let levels = try #require(
            Self.onFreshThread { () -> [ObjectIdentifier?] in
                dispatcher.dispatch(CounterAction.increase, mode: .sync) { _ in }
                let first = [Self.keptRun(level: 0), Self.keptRun(level: 1)]
                dispatcher.dispatch(CounterAction.increase, mode: .sync) { _ in }
                return first + [Self.keptRun(level: 0), Self.keptRun(level: 1)]
            }
        )
        withExtendedLifetime(subscription) {}
        #expect(levels[0] != nil && levels[1] != nil && levels[0] != levels[1])
        #expect(levels[2] == levels[0] && levels[3] == levels[1], "each level reused its own run")
        #expect(inner.state.value == "xx")
    }

    @Test("a run whose transaction a middleware kept is not reused: the kept transaction still names its stores")
    func keptTransactionKeepsItsRun() throws {
        let dispatcher = Dispatcher()
        let keeper = TransactionKeeper()
        dispatcher.register(middleware: keeper)
        try dispatcher.register(store: makeCounterStore("counter"))
        try dispatcher.register(store: Store<Text, TextAction>(identifier: "text", reducer: TextReducer()))
        let ids = try #require(
            Self.onFreshThread { () -> [UInt64] in
                let first = dispatcher.dispatch(CounterAction.increase, mode: .sync)
                // Later dispatches on this thread reach another store.
                let later = (0..<10).map { _ in dispatcher.dispatch(TextAction.append("a"), mode: .sync) }
                return [first.id] + later.map(\.id)
            }
        )
        let kept = keeper.kept.current
        #expect(kept.map(\.id) == ids)
        let first = try #require(kept.first)
        #expect(first.storeIdentifiers == ["counter"])
        #expect(first.action as? CounterAction == .increase)
        #expect(kept.dropFirst().allSatisfy { $0.storeIdentifiers == ["text"] })
    }

    @Test("a run abandoned while its operation ran is not reused: its late finish reaches no later dispatch")
    func abandonedRunIsNotReused() throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let gated = makeCounterStore("gated", reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: gated)
        try dispatcher.register(store: Store<Text, TextAction>(identifier: "text", reducer: TextReducer()))
        let finished = Gate()
        let subscription = gated.subscribe { state, _ in
            if state.count == 1 { finished.open() }
        }
        let (runs, outcomes) = try #require(
            Self.onFreshThread { () -> ([ObjectIdentifier?], [DispatchResult]) in
                let outcomes = Shared<[DispatchResult]>([])
                dispatcher.dispatch(TextAction.append("a"), mode: .sync) { outcomes.append($0) }
                var runs = [Self.keptRun(level: 0)]
                // Times out while its operation waits for the gate: the run abandons it.
                dispatcher.dispatch(CounterAction.increase, mode: .sync, timeout: .milliseconds(50)) {
                    outcomes.append($0)
                }
                runs.append(Self.keptRun(level: 0))
                for _ in 0..<20 {
                    dispatcher.dispatch(TextAction.append("b"), mode: .sync) { outcomes.append($0) }
                }
                runs.append(Self.keptRun(level: 0))
                // The operation finishes late, on its own thread, while this thread dispatches on.
                gate.open()
                #expect(finished.wait())
                for _ in 0..<20 {
                    dispatcher.dispatch(TextAction.append("c"), mode: .sync) { outcomes.append($0) }
                }
                runs.append(Self.keptRun(level: 0))
                return (runs, outcomes.current)
            }
        )
        withExtendedLifetime(subscription) {}
        #expect(started.wait())
        #expect(runs[0] != nil)
        #expect(runs[1] == nil, "the abandoned run is not kept for reuse")
        // (Once abandoned, the run is freed, and a new one may take its address: identities of
        // runs that are gone are not compared.)
        #expect(runs[2] != nil && runs[3] == runs[2])
        #expect(outcomes.count == 42)
        #expect(outcomes[1].error?.code == .timedOut)
        #expect(outcomes[1].cancelledStores == ["gated"])
        #expect(
            outcomes.enumerated().allSatisfy {
                $0.offset == 1 || ($0.element.succeeded && $0.element.handledStores == ["text"])
            }
        )
        #expect(gated.state.count == 1)
    }
}
