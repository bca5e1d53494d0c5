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

    // sample: document
    struct Document: StateType {
        var text = ""
    }

    enum DocumentAction: ActionType {
        case type(String)
        case clear
    }
    // end-sample

    final class DocumentReducer: Reducer<Document, DocumentAction> {
        override func reduce(_ action: DocumentAction, into state: inout Document) {
            switch action {
            case .type(let letters): state.text += letters
            case .clear: state.text = ""
            }
        }
    }

    /// Typing grouped by key; returns the texts seen after each step back.
    static func typing() throws -> [String] {
        let dispatcher = Dispatcher()
        let document = Store<Document, DocumentAction>(identifier: "document", reducer: DocumentReducer())
        try dispatcher.register(store: document)
        var texts: [String] = []
        // sample: group-key
        // Letters typed one after another make one undo step.
        let recorder = RecorderMiddleware(
            limit: 500,
            groupingBy: { transaction in
                if case .type = transaction.action as? DocumentAction { return "typing" }
                return nil
            }
        )
        dispatcher.register(middleware: recorder)

        for letter in ["h", "e", "y"] {
            dispatcher.dispatch(DocumentAction.type(letter), mode: .sync)
        }
        dispatcher.dispatch(DocumentAction.clear, mode: .sync)
        dispatcher.dispatch(DocumentAction.type("o"), mode: .sync)
        print(recorder.entries.map(\.transactionCount))  // [0, 3, 1, 1]

        recorder.previous()  // ""
        recorder.previous()  // "hey"
        recorder.previous()  // "": one step undid the three letters
        // end-sample
        texts.append(document.state.text)
        recorder.next()
        texts.append(document.state.text)
        texts.append(recorder.entries.map { "\($0.transactionCount)" }.joined(separator: " "))
        return texts
    }

    /// One key press that makes two transactions; returns the states after it and after undoing it.
    static func keyPress() async throws -> [String] {
        let dispatcher = Dispatcher()
        let document = Store<Document, DocumentAction>(identifier: "document", reducer: DocumentReducer())
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: document)
        try dispatcher.register(store: store)
        let recorder = RecorderMiddleware(limit: 500)
        dispatcher.register(middleware: recorder)
        // sample: group-explicit
        // One key press, two transactions finishing on other threads, one undo step.
        recorder.group { keyPress in
            keyPress.include(dispatcher.dispatch(DocumentAction.type("x")))
            keyPress.include(dispatcher.dispatch(CounterAction.increase, mode: .serial))
        }
        await dispatcher.waitForIdle()
        print(recorder.count)  // 2: the start, and the key press

        recorder.previous()  // neither the letter nor the count are left
        // end-sample
        let undone = "\(document.state.text)|\(store.state.count)"
        recorder.next()
        return ["\(recorder.count)", undone, "\(document.state.text)|\(store.state.count)"]
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

    @Test("letters typed in a row are one undo step")
    func typing() throws {
        #expect(try RecorderSamples.typing() == ["", "hey", "0 3 1 1"])
    }

    @Test("a key press of two transactions is one undo step")
    func keyPress() async throws {
        #expect(try await RecorderSamples.keyPress() == ["2", "|0", "x|1"])
    }
}
