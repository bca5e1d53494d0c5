// The samples of Docs/DispatchModes.md.

import DispatchStore
import Foundation
import Testing

enum DispatchModes {
    typealias Counter = GettingStarted.Counter
    typealias CounterAction = GettingStarted.CounterAction

    static func makeDispatcher() throws -> (Dispatcher, Store<Counter, CounterAction>) {
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: store)
        return (dispatcher, store)
    }

    static func modes() throws -> Int {
        let (dispatcher, store) = try makeDispatcher()
        // sample: modes
        dispatcher.dispatch(CounterAction.increase)  // .async: on the concurrent lane, returns at once
        dispatcher.dispatch(CounterAction.increase, mode: .serial)  // after every earlier .serial action
        dispatcher.dispatch(CounterAction.increase, mode: .sync)  // returns when all is done
        dispatcher.dispatch(CounterAction.increase, mode: .mainThread)  // on the main queue
        // end-sample
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(10)))
        return store.state.count
    }

    static func syncFromObserver() throws -> Int {
        let (dispatcher, store) = try makeDispatcher()
        // sample: sync-from-observer
        // An observer may dispatch, even .sync: it runs after the store's lock was released.
        let subscription = store.subscribe { state, action in
            if case .add = action, state.count < 10 {
                dispatcher.dispatch(CounterAction.increase, mode: .sync)
            }
        }
        dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        print(store.state.count)  // 6
        // end-sample
        subscription.cancel()
        return store.state.count
    }

    static func timeoutAndCancel() throws -> (DispatchResult?, DispatchResult?, Int) {
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: GettingStarted.RemoteCounterReducer())
        try dispatcher.register(store: store)
        let results = ResultBox()
        // sample: timeout-cancel
        // Give the operations at most two seconds once they start; the result says if they timed out.
        dispatcher.dispatch(CounterAction.add(1), mode: .sync, timeout: .seconds(2)) { result in
            if result.error?.code == .timedOut { print("gave up:", result.cancelledStores) }
            results.first = result  // hidden
        }

        // Cancel a queued dispatch: operations not started are skipped, running ones are asked to stop.
        let transaction = dispatcher.dispatch(CounterAction.add(100), mode: .serial) { result in
            print(result.wasCancelled ? "cancelled" : "done")
            results.second = result  // hidden
        }
        transaction.cancel()
        // end-sample
        #expect(dispatcher.waitUntilIdle(timeout: .seconds(10)))
        return (results.first, results.second, store.state.count)
    }

    /// A command-line program that dispatches to the main queue: never called by the tests.
    static func commandLineMain() {
        // sample: main-runloop
        // On Linux the main queue runs only while the program drives it.
        let dispatcher = Dispatcher()
        dispatcher.dispatch(CounterAction.increase, mode: .mainThread) { _ in
            dispatchPrecondition(condition: .onQueue(.main))  // not Thread.isMainThread
            exit(0)
        }
        RunLoop.main.run()  // or dispatchMain(), which never returns
        // end-sample
    }

    static func awaiting() async throws -> DispatchResult {
        let (dispatcher, _) = try makeDispatcher()
        // sample: perform
        let task = Task {
            await dispatcher.perform(CounterAction.add(3), mode: .serial, timeout: .seconds(5))
        }
        // task.cancel() here would cancel the transaction; the result would say so.
        let result = await task.value
        print(result.handledStores)  // ["counter"]
        // end-sample
        return result
    }
}

/// Where the sample's completions leave their results for the test.
final class ResultBox: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var values: [DispatchResult?] = [nil, nil]

    var first: DispatchResult? {
        get { lock.withLock { values[0] } }
        set { lock.withLock { values[0] = newValue } }
    }

    var second: DispatchResult? {
        get { lock.withLock { values[1] } }
        set { lock.withLock { values[1] = newValue } }
    }
}

@Suite("Docs: dispatch modes and threading")
struct DispatchModesSamples {
    @Test("the four modes each apply the action once")
    func modes() throws {
        #expect(try DispatchModes.modes() == 4)
    }

    @Test("an observer dispatching .sync does not deadlock")
    func syncFromObserver() throws {
        #expect(try DispatchModes.syncFromObserver() == 6)
    }

    @Test("a timeout that is not reached, and a cancelled serial dispatch")
    func timeoutAndCancel() throws {
        let (timed, cancelled, count) = try DispatchModes.timeoutAndCancel()
        #expect(timed?.succeeded == true)
        // The cancel races with the serial lane: the operation was stopped, or it had already run.
        let stopped = try #require(cancelled).wasCancelled
        #expect(count == 1 || count == 101)
        #expect(stopped || count == 101)
    }

    @Test("perform returns the result")
    func perform() async throws {
        #expect(try await DispatchModes.awaiting().handledStores == ["counter"])
    }
}
