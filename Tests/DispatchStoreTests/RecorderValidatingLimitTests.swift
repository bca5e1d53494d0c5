import DispatchStore
import TestSupport
import Testing

/// The states of every entry of `recorder`, as the counter's counts.
private func counts(_ recorder: RecorderMiddleware) -> [Int] {
    recorder.entries.compactMap { ($0.state(of: "counter") as? Counter)?.count }
}

/// The throwing initializer for limits read at run time: the check, and that a valid limit works.
@Suite("RecorderMiddleware(validatingLimit:)")
struct RecorderValidatingLimitTests {
    @Test(
        "a limit below 1 throws invalidHistoryLimit with a message naming the limit",
        arguments: [0, -3, Int.min]
    )
    /// A limit below 1 is an error naming it, not a stop.
    func limitBelowOneThrows(limit: Int) {
        let error = #expect(throws: DispatchError.self) { try RecorderMiddleware(validatingLimit: limit) }
        #expect(error?.code == .invalidHistoryLimit)
        #expect(error?.code.description == "invalidHistoryLimit")
        #expect(error?.message.hasPrefix("The history limit \(limit) is below 1:") == true)
        #expect(error?.message.contains("such as 500") == true)
        #expect(error?.storeIdentifier == nil)
    }

    @Test("a limit of 1 keeps entry 0 only, then only the newest entry, as RecorderMiddleware(limit: 1) does")
    /// The smallest valid limit keeps one entry, exactly as the literal initializer does.
    func limitOfOne() throws {
        let validated = try RecorderMiddleware(validatingLimit: 1)
        let literal = RecorderMiddleware(limit: 1)
        #expect(validated.limit == 1)
        for recorder in [validated, literal] {
            let dispatcher = Dispatcher()
            let counter = makeCounterStore()
            try dispatcher.register(store: counter)
            dispatcher.register(middleware: recorder)

            #expect(recorder.entries.map(\.id) == [0])
            #expect(recorder.currentEntry?.transaction == nil)
            #expect(recorder.position == 0)
            #expect(!recorder.canGoBack && !recorder.canGoForward)

            dispatcher.dispatch(CounterAction.add(2), mode: .sync)
            dispatcher.dispatch(CounterAction.add(3), mode: .sync)
            #expect(recorder.entries.map(\.id) == [2])
            #expect(counts(recorder) == [5])
            #expect(recorder.position == 0)
            #expect(!recorder.previous())
            #expect(!recorder.next())
            #expect(counter.state.count == 5)
        }
    }

    @Test("a valid limit passes the recording filter and the group key on")
    /// `recording:` and `groupingBy:` reach the recorder.
    func passesOptionsOn() throws {
        let recorder = try RecorderMiddleware(
            validatingLimit: 3,
            recording: { ($0.action as? CounterAction) != .increase },
            groupingBy: { _ in "counter" }
        )
        let dispatcher = Dispatcher()
        let counter = makeCounterStore()
        try dispatcher.register(store: counter)
        dispatcher.register(middleware: recorder)

        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        #expect(recorder.count == 1)
        dispatcher.dispatch(CounterAction.add(2), mode: .sync)
        dispatcher.dispatch(CounterAction.add(3), mode: .sync)
        #expect(recorder.limit == 3)
        #expect(recorder.entries.map(\.transactionCount) == [0, 2])
        #expect(counts(recorder) == [0, 6])
    }
}
