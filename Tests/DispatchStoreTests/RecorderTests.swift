import DispatchStore
import Foundation
import TestSupport
import Testing

/// A dispatcher with a counter and a text store (two state types), and a recorder.
private struct Fixture {
    let dispatcher = Dispatcher()
    let counter = makeCounterStore()
    let text = Store<Text, TextAction>(identifier: "text", reducer: TextReducer())
    let recorder: RecorderMiddleware

    init(limit: Int = 500, recording: (@Sendable (Transaction) -> Bool)? = nil) throws {
        recorder = recording.map { RecorderMiddleware(limit: limit, recording: $0) } ?? RecorderMiddleware(limit: limit)
        try dispatcher.register(store: counter)
        try dispatcher.register(store: text)
        dispatcher.register(middleware: recorder)
    }

    var states: String {
        "\(counter.state.count) \(text.state.value)"
    }
}

@Suite("RecorderMiddleware")
struct RecorderTests {
    @Test("the initial state is entry 0 and can be restored (the original could not)")
    func initialStateRestores() throws {
        let fixture = try Fixture()
        #expect(fixture.recorder.count == 1)
        #expect(fixture.recorder.currentEntry?.transaction == nil)
        fixture.dispatcher.dispatch(CounterAction.add(3), mode: .sync)
        fixture.dispatcher.dispatch(TextAction.append("x"), mode: .sync)
        try fixture.recorder.jump(to: 0)
        #expect(fixture.states == "0 ")
        #expect(fixture.recorder.position == 0)
        #expect(!fixture.recorder.canGoBack)
        #expect(!fixture.recorder.previous())
    }

    @Test("entries recorded after a registration or an unregistration hold exactly the stores registered then")
    func entriesFollowRegistrations() throws {
        let fixture = try Fixture()
        fixture.dispatcher.dispatch(CounterAction.add(1), mode: .sync)
        let late = makeCounterStore("late")
        try fixture.dispatcher.register(store: late)
        fixture.dispatcher.dispatch(CounterAction.add(1), mode: .sync)
        _ = fixture.dispatcher.unregister(identifier: "text")
        fixture.dispatcher.dispatch(CounterAction.add(1), mode: .sync)
        let stores = fixture.recorder.entries.dropFirst().map { $0.snapshots.map(\.storeIdentifier).sorted() }
        // A store registered later joins the earlier entries too (with its state when it joined).
        #expect(stores == [["counter", "late", "text"], ["counter", "late", "text"], ["counter", "late"]])
        let lastCounts = fixture.recorder.entries.last?.snapshots.compactMap { ($0.state as? Counter)?.count }
        #expect(lastCounts?.sorted() == [2, 3])
    }

    @Test("an entry's snapshots are in registration order, whatever order the stores were created in")
    func snapshotsInRegistrationOrder() throws {
        let dispatcher = Dispatcher()
        // Created first, so it is locked first when every store is locked; registered last.
        let createdFirst = makeCounterStore("created first")
        let createdLater = Store<Text, TextAction>(identifier: "created later", reducer: TextReducer())
        let recorder = RecorderMiddleware(limit: 10)
        try dispatcher.register(store: createdLater)
        try dispatcher.register(store: createdFirst)
        dispatcher.register(middleware: recorder)
        dispatcher.dispatch(CounterAction.add(1), mode: .sync)
        let order = recorder.entries.map { $0.snapshots.map(\.storeIdentifier) }
        #expect(order == [["created later", "created first"], ["created later", "created first"]])
    }

    @Test("previous() restores every store at once, not only one (the original restored one)")
    func restoresAllStores() throws {
        let fixture = try Fixture()
        fixture.dispatcher.dispatch(CounterAction.add(1), mode: .sync)
        fixture.dispatcher.dispatch(TextAction.append("a"), mode: .sync)
        fixture.dispatcher.dispatch(CounterAction.add(10), mode: .sync)
        #expect(fixture.states == "11 a")
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "1 a")
        #expect(fixture.recorder.previous())
        #expect(fixture.states == "1 ")
        #expect(fixture.recorder.next())
        #expect(fixture.recorder.next())
        #expect(fixture.states == "11 a")
        #expect(!fixture.recorder.next())
    }

    @Test("going back and forth keeps every record (the original dropped one after going back)")
    func keepsRecordsWhenMoving() throws {
        let fixture = try Fixture()
        for amount in 1...4 {
            fixture.dispatcher.dispatch(CounterAction.add(amount), mode: .sync)
        }
        let ids = fixture.recorder.entries.map(\.id)
        #expect(ids == [0, 1, 2, 3, 4])
        while fixture.recorder.previous() {}
        while fixture.recorder.next() {}
        #expect(fixture.recorder.entries.map(\.id) == ids)
        #expect(fixture.counter.state.count == 10)
    }

    @Test("a dispatch after going back drops the redo tail and is recorded after the current entry")
    func dropsRedoTail() throws {
        let fixture = try Fixture()
        for amount in [1, 2, 3] {
            fixture.dispatcher.dispatch(CounterAction.add(amount), mode: .sync)
        }
        fixture.recorder.previous()
        fixture.recorder.previous()
        #expect(fixture.counter.state.count == 1)
        fixture.dispatcher.dispatch(CounterAction.add(100), mode: .sync)
        #expect(fixture.recorder.entries.map(\.id) == [0, 1, 4])
        #expect(fixture.recorder.position == 2)
        #expect(!fixture.recorder.canGoForward)
        #expect(fixture.counter.state.count == 101)
        fixture.recorder.previous()
        #expect(fixture.counter.state.count == 1)
    }

    @Test("the limit is enforced: the oldest entries are dropped and the position stays right")
    func enforcesLimit() throws {
        let fixture = try Fixture(limit: 5)
        for _ in 0..<20 {
            fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        }
        #expect(fixture.recorder.count == 5)
        #expect(fixture.recorder.entries.map(\.id) == [16, 17, 18, 19, 20])
        #expect(fixture.recorder.position == 4)
        var steps = 0
        while fixture.recorder.previous() { steps += 1 }
        #expect(steps == 4)
        #expect(fixture.counter.state.count == 16)
    }

    @Test(
        "every out-of-range position is rejected with historyPositionOutOfRange, without overflowing",
        arguments: [Int.min, Int.min + 1, -1, 3, 4, Int.max - 1, Int.max]
    )
    func outOfRangePositions(position: Int) throws {
        let fixture = try Fixture()
        fixture.dispatcher.dispatch(CounterAction.add(1), mode: .sync)
        fixture.dispatcher.dispatch(CounterAction.add(2), mode: .sync)
        fixture.recorder.previous()
        let error = #expect(throws: DispatchError.self) { try fixture.recorder.jump(to: position) }
        #expect(error?.code == .historyPositionOutOfRange)
        #expect(
            error?.message
                == "History position \(position) is out of range: the recorder holds positions 0 through 2."
        )
        #expect(error.map { "\($0)" } == error?.message)
        // Nothing moved.
        #expect(fixture.recorder.position == 1)
        #expect(fixture.counter.state.count == 1)
    }

    @Test(
        "any positive limit is accepted and the history grows as entries come, with none allocated up front",
        arguments: [1, 2, 1 << 40, Int.max - 1, Int.max]
    )
    func anyPositiveLimit(limit: Int) throws {
        let fixture = try Fixture(limit: limit)
        #expect(fixture.recorder.limit == limit)
        for _ in 0..<5 {
            fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        }
        let kept = min(limit, 6)
        #expect(fixture.recorder.count == kept)
        #expect(fixture.recorder.entries.map(\.id) == Array((6 - kept)..<6))
        #expect(fixture.recorder.position == kept - 1)
        // Back to the oldest entry kept, then forward again.
        try fixture.recorder.jump(to: 0)
        #expect(fixture.counter.state.count == 6 - kept)
        while fixture.recorder.next() {}
        #expect(fixture.counter.state.count == 5)
    }

    @Test("a full history with a large limit keeps dropping the oldest entry after going back")
    func fullHistoryAfterGoingBack() throws {
        let fixture = try Fixture(limit: 3)
        for _ in 0..<5 {
            fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        }
        #expect(fixture.recorder.entries.map(\.id) == [3, 4, 5])
        fixture.recorder.previous()
        fixture.recorder.previous()
        fixture.dispatcher.dispatch(CounterAction.add(10), mode: .sync)
        #expect(fixture.recorder.entries.map(\.id) == [3, 6])
        fixture.dispatcher.dispatch(CounterAction.add(10), mode: .sync)
        fixture.dispatcher.dispatch(CounterAction.add(10), mode: .sync)
        #expect(fixture.recorder.entries.map(\.id) == [6, 7, 8])
        #expect(fixture.recorder.entries.compactMap { ($0.state(of: "counter") as? Counter)?.count } == [13, 23, 33])
        #expect(fixture.recorder.previous())
        #expect(fixture.recorder.previous())
        #expect(!fixture.recorder.previous())
        #expect(fixture.counter.state.count == 13)
    }

    @Test("a limit below 1 stops the program with a message naming the limit")
    func limitBelowOne() async {
        // Exit tests cannot capture the limit, so each one spells it out.
        let zero = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RecorderMiddleware(limit: 0)
        }
        let negative = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RecorderMiddleware(limit: -1)
        }
        let minimum = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            _ = RecorderMiddleware(limit: .min)
        }
        for (result, limit) in [(zero, 0), (negative, -1), (minimum, Int.min)] {
            let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(message.contains("RecorderMiddleware(limit: \(limit)): the limit must be at least 1"))
        }
    }

    @Test("restoring from inside observers and dispatching meanwhile does not crash (the original broke exclusivity)")
    func reentrantUseIsSafe() throws {
        let fixture = try Fixture()
        let recorder = fixture.recorder
        let dispatcher = fixture.dispatcher
        let entriesSeenInRestore = Shared<[Int]>([])
        let movedBack = Shared(false)
        let dispatchedFromRestore = Shared(false)
        let subscription = fixture.counter.subscribe { state, action in
            if action != nil {
                // Move back from inside the delivery of the third increase.
                if state.count == 3, movedBack.claimFirst() { recorder.previous() }
                return
            }
            entriesSeenInRestore.append(recorder.entries.count)
            if dispatchedFromRestore.claimFirst() {
                dispatcher.dispatch(TextAction.append("r"), mode: .sync)
            }
        }
        for _ in 0..<3 {
            dispatcher.dispatch(CounterAction.increase, mode: .sync)
        }
        // The third increase's entry was not taken yet when the observer moved back to entry 1
        // (count 1); the text dispatch from the restore then dropped entry 2, and the third
        // increase's own entry came last.
        #expect(fixture.states == "1 r")
        #expect(recorder.entries.map(\.id) == [0, 1, 3, 4])
        #expect(recorder.previous())
        #expect(fixture.states == "1 r")
        #expect(recorder.position == 2)
        #expect(entriesSeenInRestore.current == [3, 4])
        _ = subscription
    }

    @Test("a restore sets the states synchronously, calls observers with a nil action and is not recorded")
    func restoreIsSynchronousAndUnrecorded() throws {
        let fixture = try Fixture()
        let seen = Shared<[String]>([])
        let subscription = fixture.counter.subscribe { state, action in
            seen.append("\(state.count) \(action.map { "\($0)" } ?? "restore")")
        }
        fixture.dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        let count = fixture.recorder.count
        #expect(fixture.recorder.previous())
        #expect(seen.current == ["5 add(5)", "0 restore"])
        #expect(fixture.recorder.count == count)
        _ = subscription
    }

    @Test("stores registered after the recorder are recorded; earlier entries hold their registration state")
    func laterStores() throws {
        let fixture = try Fixture()
        fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        let late = Store<Counter, CounterAction>(
            identifier: "late",
            reducer: InlineCounterReducer(),
            initialState: Counter(count: 100)
        )
        try fixture.dispatcher.register(store: late)
        fixture.dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        #expect(late.state.count == 105)
        #expect(
            fixture.recorder.entries.map { $0.state(of: "late") as? Counter } == [
                Counter(count: 100), Counter(count: 100), Counter(count: 105),
            ]
        )
        try fixture.recorder.jump(to: 0)
        #expect(late.state.count == 100)
        #expect(fixture.counter.state.count == 0)
    }

    @Test("an unhandled dispatch makes no entry; a recording filter leaves transactions out")
    func whatIsRecorded() throws {
        let fixture = try Fixture(recording: { !($0.action is TextAction) })
        fixture.dispatcher.dispatch(UnhandledAction(), mode: .sync)
        fixture.dispatcher.dispatch(TextAction.append("ignored"), mode: .sync)
        fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        let entries = fixture.recorder.entries
        #expect(entries.count == 2)
        #expect(entries[1].action as? CounterAction == .increase)
        #expect(entries[1].transaction?.storeIdentifiers == ["counter"])
        #expect(entries[1].date >= entries[0].date)
    }

    @Test("misuse gets a clear error: positions out of range, a detached recorder, a restore inside updateState")
    func misuse() throws {
        let fixture = try Fixture()
        let outOfRange = #expect(throws: DispatchError.self) { try fixture.recorder.jump(to: 7) }
        #expect(outOfRange?.code == .historyPositionOutOfRange)
        #expect(outOfRange?.message.contains("7") == true)

        let detached = RecorderMiddleware()
        #expect(!detached.previous())
        #expect((#expect(throws: DispatchError.self) { try detached.jump(to: 0) })?.code == .recorderDetached)

        fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        let moved = fixture.counter.updateState { _ in fixture.recorder.previous() }
        #expect(!moved)
        let reentrant = fixture.counter.updateState { _ in
            #expect(throws: DispatchError.self) { try fixture.recorder.jump(to: 0) }
        }
        _ = reentrant
        #expect(fixture.recorder.position == 1)
    }

    @Test("each entry is a consistent cut: no commit falls between reading two stores")
    func consistentCut() throws {
        let dispatcher = Dispatcher()
        let first = makeCounterStore("first")
        let second = makeCounterStore("second")
        let ticks = Store<Text, TextAction>(identifier: "ticks", reducer: TextReducer())
        for store in [first, second] {
            try dispatcher.register(store: store)
        }
        try dispatcher.register(store: ticks)
        let recorder = RecorderMiddleware(limit: 10_000)
        dispatcher.register(middleware: recorder)
        concurrently(2) { thread in
            for _ in 0..<3_000 {
                if thread == 0 {
                    // Always first before second, each its own commit.
                    first.updateState { $0.count += 1 }
                    second.updateState { $0.count += 1 }
                } else {
                    dispatcher.dispatch(TextAction.append("."), mode: .sync)
                }
            }
        }
        let pairs = recorder.entries.map {
            (($0.state(of: "first") as? Counter)?.count ?? -1, ($0.state(of: "second") as? Counter)?.count ?? -1)
        }
        #expect(pairs.count == 3_001)
        #expect(pairs.allSatisfy { first, second in first == second || first == second + 1 })
    }

    @Test("recording while other threads dispatch and move through the history stays consistent")
    func concurrentRecordingAndMoving() throws {
        let fixture = try Fixture(limit: 50)
        // Some history first, so that the mover's first previous() has somewhere to go.
        for _ in 0..<10 {
            fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        }
        let moves = Shared(0)
        concurrently(3) { thread in
            for index in 0..<1_000 {
                switch thread {
                case 0: fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
                case 1:
                    fixture.dispatcher.dispatch(
                        TextAction.append("x"),
                        mode: index.isMultiple(of: 2) ? .async : .serial
                    )
                default:
                    if index.isMultiple(of: 3) ? fixture.recorder.previous() : fixture.recorder.next() {
                        moves.increment()
                    }
                }
            }
        }
        #expect(fixture.dispatcher.waitUntilIdle(timeout: .seconds(120)))
        let entries = fixture.recorder.entries
        #expect(entries.count == 50)
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.id < $1.id })
        #expect(fixture.recorder.position < 50)
        #expect(moves.current > 0)
    }

    @Test("subscribers hear of every entry and every move")
    func listeners() throws {
        let fixture = try Fixture()
        let calls = Shared(0)
        let subscription = fixture.recorder.subscribe { calls.increment() }
        fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        fixture.recorder.previous()
        fixture.recorder.next()
        #expect(calls.current == 3)
        subscription.cancel()
        fixture.dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(calls.current == 3)
    }
}
