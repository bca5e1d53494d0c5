// The samples of Docs/Recorder.md.

import DispatchStore
import Testing

enum RecorderSamples {
    typealias Counter = GettingStarted.Counter
    typealias CounterAction = GettingStarted.CounterAction

    static func run() throws -> [Int] {
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: store)
        var counts: [Int] = []
        // sample: basics
        let recorder = RecorderMiddleware(limit: 500)
        dispatcher.register(middleware: recorder)

        dispatcher.dispatch(CounterAction.add(2), mode: .sync)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)

        recorder.previous()  // every store as it was after add(2); observers already called
        recorder.next()  // and forward again
        try recorder.jump(to: 0)  // the states when the recorder was registered
        // end-sample
        counts.append(store.state.count)
        recorder.next()
        counts.append(store.state.count)
        // sample: entries
        for entry in recorder.entries {
            print(entry.id, entry.action.map { "\($0)" } ?? "start", entry.date)
        }
        print("at \(recorder.position) of \(recorder.count)")  // at 1 of 3
        // end-sample
        counts.append(recorder.position)
        return counts
    }

    static func filtered() -> RecorderMiddleware {
        // sample: filter
        // Record only the actions that change the count by more than one.
        let recorder = RecorderMiddleware(limit: 500) { transaction in
            if case .add(let amount) = transaction.action as? CounterAction { return abs(amount) > 1 }
            return false
        }
        // end-sample
        return recorder
    }

    static func filteredRun() throws -> Int {
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: store)
        let recorder = filtered()
        dispatcher.register(middleware: recorder)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        dispatcher.dispatch(CounterAction.add(1), mode: .sync)
        return recorder.count
    }
}

@Suite("Docs: the recorder")
struct RecorderSamplesTests {
    @Test("moving back to the start and forward one entry")
    func basics() throws {
        #expect(try RecorderSamples.run() == [0, 2, 1])
    }

    @Test("the filter records only the larger steps")
    func filter() throws {
        #expect(try RecorderSamples.filteredRun() == 2)
    }
}
