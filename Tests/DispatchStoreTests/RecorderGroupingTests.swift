import DispatchStore
import Foundation
import TestSupport
import Testing

/// The counter's `add(n)` actions keyed by `n`; other actions have no key.
@Sendable private func amountKey(_ transaction: Transaction) -> (any Hashable & Sendable)? {
    if case .add(let amount) = transaction.action as? CounterAction { return amount }
    return nil
}

/// A dispatcher with a counter, a text store and two counters whose operations finish on another
/// thread when their gate opens (reached with `to:`), recorded by `recorder`.
private struct GroupFixture {
    let dispatcher = Dispatcher()
    let counter = makeCounterStore()
    let text = Store<Text, TextAction>(identifier: "text", reducer: TextReducer())
    let firstGate = Gate()
    let secondGate = Gate()
    let first: Store<Counter, CounterAction>
    let second: Store<Counter, CounterAction>
    let recorder: RecorderMiddleware

    init(
        recording: @escaping @Sendable (Transaction) -> Bool = { _ in true },
        groupingBy key: (@Sendable (Transaction) -> (any Hashable & Sendable)?)? = nil
    ) throws {
        first = makeCounterStore("first", reducer: GatedCounterReducer(gate: firstGate))
        second = makeCounterStore("second", reducer: GatedCounterReducer(gate: secondGate))
        recorder = RecorderMiddleware(limit: 10_000, recording: recording, groupingBy: key)
        try dispatcher.register(store: counter)
        try dispatcher.register(store: text)
        try dispatcher.register(store: first)
        try dispatcher.register(store: second)
        dispatcher.register(middleware: recorder)
    }

    /// The counter, the text, and the two gated counters.
    var states: String {
        "\(counter.state.count) \(text.state.value) \(first.state.count) \(second.state.count)"
    }

    /// The transaction counts of the entries.
    var counts: [Int] {
        recorder.entries.map(\.transactionCount)
    }
}

@Suite("RecorderMiddleware: undo steps of several transactions")
struct RecorderGroupingTests {
    // MARK: Group keys

    @Test("consecutive transactions with the same key make one entry, undone by one previous()")
    func sameKeyMakesOneEntry() throws {
        let fixture = try GroupFixture(groupingBy: { ($0.action is TextAction) ? "typing" : nil })
        for letter in ["a", "b", "c"] {
            fixture.dispatcher.dispatch(TextAction.append(letter), mode: .sync)
        }
        let entries = fixture.recorder.entries
        #expect(entries.map(\.id) == [0, 1])
        #expect(fixture.counts == [0, 3])
        #expect(entries[1].groupKey as? String == "typing")
        #expect(entries[1].action as? TextAction == .append("c"))
        #expect((entries[1].state(of: "text") as? Text)?.value == "abc")

        fixture.dispatcher.dispatch(CounterAction.increase, to: "counter", mode: .sync)
        fixture.dispatcher.dispatch(TextAction.append("d"), mode: .sync)
        #expect(fixture.recorder.entries.map(\.id) == [0, 1, 2, 3])
        #expect(fixture.counts == [0, 3, 1, 1])
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "1 abc 0 0")
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "0 abc 0 0")
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "0  0 0")
        #expect(!fixture.recorder.previous())
    }

    @Test("another key, no key, or a move starts a new entry; transactions left unrecorded do not break a run")
    func whatEndsARun() throws {
        let fixture = try GroupFixture(recording: { !($0.action is TextAction) }, groupingBy: amountKey)
        let dispatcher = fixture.dispatcher
        dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync)
        dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync)
        dispatcher.dispatch(TextAction.append("not recorded"), mode: .sync)
        dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync)
        #expect(fixture.counts == [0, 3])
        dispatcher.dispatch(CounterAction.add(2), to: "counter", mode: .sync)
        dispatcher.dispatch(CounterAction.increase, to: "counter", mode: .sync)
        dispatcher.dispatch(CounterAction.increase, to: "counter", mode: .sync)
        #expect(fixture.counts == [0, 3, 1, 1, 1])
        #expect(fixture.recorder.entries.map { $0.groupKey as? Int } == [nil, 1, 2, nil, nil])

        // Back and forth to the newest entry: the run ends even with the same key.
        dispatcher.dispatch(CounterAction.add(5), to: "counter", mode: .sync)
        #expect(fixture.recorder.previous())
        #expect(fixture.recorder.next())
        dispatcher.dispatch(CounterAction.add(5), to: "counter", mode: .sync)
        #expect(fixture.counts == [0, 3, 1, 1, 1, 1, 1])
        // After going back, the next transaction drops the redo tail and starts an entry of its own.
        #expect(fixture.recorder.previous())
        dispatcher.dispatch(CounterAction.add(5), to: "counter", mode: .sync)
        #expect(fixture.counts == [0, 3, 1, 1, 1, 1, 1])
        #expect(fixture.recorder.entries.map(\.id) == [0, 1, 2, 3, 4, 5, 7])
        #expect(fixture.counter.state.count == 17)
        #expect(fixture.recorder.previous())
        #expect(fixture.counter.state.count == 12)
    }

    @Test("a run replaces the newest entry's states in place and tells the listeners")
    func runNotifiesListeners() throws {
        let fixture = try GroupFixture(groupingBy: amountKey)
        let calls = Shared(0)
        let subscription = fixture.recorder.subscribe { calls.increment() }
        fixture.dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync)
        fixture.dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync)
        #expect(calls.current == 2)
        #expect(fixture.recorder.position == 1)
        #expect((fixture.recorder.currentEntry?.state(of: "counter") as? Counter)?.count == 2)
        _ = subscription
    }

    // MARK: Explicit groups

    @Test("a group of .sync dispatches, finished before they are included, makes one entry")
    func syncGroup() throws {
        let fixture = try GroupFixture()
        let dispatcher = fixture.dispatcher
        fixture.recorder.group { gesture in
            gesture.include(dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync))
            gesture.include(dispatcher.dispatch(TextAction.append("a"), mode: .sync))
            gesture.include(dispatcher.dispatch(CounterAction.add(2), to: "counter", mode: .sync))
        }
        #expect(fixture.counts == [0, 3])
        #expect(fixture.recorder.entries.map(\.id) == [0, 3])
        #expect(fixture.recorder.currentEntry?.action as? CounterAction == .add(2))
        #expect(fixture.states == "3 a 0 0")
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "0  0 0")
        #expect(fixture.recorder.next())
        #expect(fixture.states == "3 a 0 0")
    }

    @Test("a group's transactions finishing on other threads after it ended make one entry; others stay apart")
    func asyncGroupFinishingLater() throws {
        let fixture = try GroupFixture()
        let dispatcher = fixture.dispatcher
        let firstDone = Gate()
        let secondDone = Gate()
        let gesture = fixture.recorder.beginGroup()
        gesture.include(dispatcher.dispatch(CounterAction.add(1), to: "first") { _ in firstDone.open() })
        gesture.include(dispatcher.dispatch(CounterAction.add(10), to: "second") { _ in secondDone.open() })
        gesture.end()
        #expect(gesture.isEnded)
        // Another transaction finishes while the group's are still running: an entry of its own.
        dispatcher.dispatch(TextAction.append("x"), mode: .sync)
        #expect(fixture.counts == [0, 1])

        fixture.secondGate.open()
        #expect(secondDone.wait())
        #expect(fixture.counts == [0, 1, 1])
        fixture.firstGate.open()
        #expect(firstDone.wait())
        #expect(fixture.counts == [0, 1, 2])
        #expect(fixture.recorder.entries.map(\.id) == [0, 1, 2])
        #expect(fixture.states == "0 x 1 10")

        // One step back undoes the whole gesture, and only it.
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "0 x 0 0")
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "0  0 0")
    }

    @Test("when other transactions are recorded between two of a group's, the group's step moves past them")
    func groupStepMovesPastOthers() throws {
        let fixture = try GroupFixture()
        let dispatcher = fixture.dispatcher
        let firstDone = Gate()
        let secondDone = Gate()
        fixture.recorder.group { gesture in
            gesture.include(dispatcher.dispatch(CounterAction.add(1), to: "first") { _ in firstDone.open() })
            gesture.include(dispatcher.dispatch(CounterAction.add(10), to: "second") { _ in secondDone.open() })
        }
        fixture.firstGate.open()
        #expect(firstDone.wait())
        dispatcher.dispatch(TextAction.append("x"), mode: .sync)
        #expect(fixture.counts == [0, 1, 1])
        fixture.secondGate.open()
        #expect(secondDone.wait())
        // The text entry (id 2) stays where it was taken; the step is the newest entry again.
        #expect(fixture.recorder.entries.map(\.id) == [0, 2, 3])
        #expect(fixture.counts == [0, 1, 2])
        #expect(fixture.recorder.position == 2)
        #expect(fixture.recorder.previous())
        // The text entry was taken with the gesture half done.
        #expect(fixture.states == "0 x 1 0")
    }

    @Test("a .sync transaction included after another transaction was recorded joins the group's step")
    func lateInclusionMovesStep() throws {
        let fixture = try GroupFixture()
        let dispatcher = fixture.dispatcher
        let gesture = fixture.recorder.beginGroup()
        gesture.include(dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync))
        dispatcher.dispatch(TextAction.append("x"), mode: .sync)
        gesture.include(dispatcher.dispatch(CounterAction.add(2), to: "counter", mode: .sync))
        gesture.end()
        #expect(fixture.recorder.entries.map(\.id) == [0, 2, 3])
        #expect(fixture.counts == [0, 1, 2])
        #expect(fixture.recorder.position == 2)
        #expect(fixture.states == "3 x 0 0")
    }

    @Test("a move ends the group's step: its transactions finishing afterwards make a new entry")
    func moveEndsGroupStep() throws {
        let fixture = try GroupFixture()
        let dispatcher = fixture.dispatcher
        let done = Countdown(2)
        let gesture = fixture.recorder.beginGroup()
        gesture.include(dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync))
        gesture.include(dispatcher.dispatch(CounterAction.add(10), to: "first") { _ in done.tick() })
        gesture.include(dispatcher.dispatch(CounterAction.add(100), to: "second") { _ in done.tick() })
        #expect(fixture.counts == [0, 1])
        #expect(fixture.recorder.previous())
        fixture.firstGate.open()
        fixture.secondGate.open()
        #expect(done.wait())
        // The redo tail (the counter's entry) was dropped; the two later transactions are one entry.
        #expect(fixture.recorder.entries.map(\.id) == [0, 2])
        #expect(fixture.counts == [0, 2])
        #expect(fixture.states == "0  10 100")
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "0  0 0")
    }

    @Test(
        "include after end() does nothing; a released group keeps its pending transactions; unrecorded ones are ignored"
    )
    func groupEdges() throws {
        let fixture = try GroupFixture(recording: { !($0.action is TextAction) })
        let dispatcher = fixture.dispatcher
        let gesture = fixture.recorder.beginGroup()
        gesture.include(dispatcher.dispatch(TextAction.append("not recorded"), mode: .sync))
        gesture.include(dispatcher.dispatch(UnhandledAction(), mode: .sync))
        gesture.include(dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync))
        #expect(fixture.counts == [0, 1])
        gesture.end()
        gesture.end()
        gesture.include(dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync))
        #expect(fixture.counts == [0, 1, 1])

        // Released before its second transaction finishes: that one still joins its step.
        let done = Gate()
        do {
            let released = fixture.recorder.beginGroup()
            released.include(dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync))
            released.include(dispatcher.dispatch(CounterAction.add(10), to: "first") { _ in done.open() })
        }
        #expect(fixture.counts == [0, 1, 1, 1])
        fixture.firstGate.open()
        #expect(done.wait())
        #expect(fixture.counts == [0, 1, 1, 2])

        // Including the same transaction twice counts it once.
        let transaction = dispatcher.dispatch(CounterAction.add(1), to: "counter", mode: .sync)
        let twice = fixture.recorder.beginGroup()
        twice.include(transaction)
        twice.include(transaction)
        #expect(fixture.counts == [0, 1, 1, 2, 1])
        #expect(fixture.states == "4 not recorded 10 0")
    }

    @Test("groups from many threads at once: exactly one entry per group, holding both of its transactions")
    func concurrentGroups() throws {
        let fixture = try GroupFixture()
        let dispatcher = fixture.dispatcher
        let threads = 8
        let groupsPerThread = 40
        let finished = Countdown(threads * groupsPerThread * 2)
        concurrently(threads) { thread in
            for index in 0..<groupsPerThread {
                let mode: DispatchMode = [.async, .serial, .sync][(thread + index) % 3]
                fixture.recorder.group { gesture in
                    gesture.include(
                        dispatcher.dispatch(CounterAction.increase, to: "counter", mode: mode) { _ in finished.tick() }
                    )
                    gesture.include(dispatcher.dispatch(TextAction.append("."), mode: mode) { _ in finished.tick() })
                }
            }
        }
        #expect(finished.wait())
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(120)))
        let entries = fixture.recorder.entries
        #expect(entries.count == threads * groupsPerThread + 1)
        #expect(entries.dropFirst().allSatisfy { $0.transactionCount == 2 })
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.id < $1.id })
        #expect(fixture.counter.state.count == threads * groupsPerThread)
        // The newest entry holds the final states; the oldest is the start.
        #expect((entries.last?.state(of: "counter") as? Counter)?.count == threads * groupsPerThread)
        try fixture.recorder.jump(to: 0)
        #expect(fixture.states == "0  0 0")
    }
}
