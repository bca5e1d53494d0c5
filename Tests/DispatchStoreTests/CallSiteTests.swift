import Dispatch
import DispatchStore
import TestSupport
import Testing

// The call sites of the core issue, written as a newcomer would from the README.

private final class MyLogger: Middleware {
    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
}

private final class Screen {
    let dispatcher = Dispatcher()
    let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
    let seen = Shared<[Int]>([])

    func run() throws -> (now: Int, same: Bool, seen: [Int], completions: Int) {
        try dispatcher.register(store: store)
        let completions = Shared(0)
        let done = Gate()
        let seen = self.seen
        let token = store.register(observer: self) { state, action in
            seen.append(state.count)
            _ = action as CounterAction?
        }
        dispatcher.dispatch(CounterAction.add(2), mode: .sync)
        dispatcher.dispatch(CounterAction.increase, mode: .serial) { result in
            completions.increment()
            done.open()
        }
        done.wait()
        let now = store.state.count
        let same = dispatcher.store(with: "counter") as? Store<Counter, CounterAction>
        store.unregister(observer: self)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        _ = token
        dispatcher.register(middleware: MyLogger())
        dispatcher.unregister(identifier: "counter")
        return (now, same === store, self.seen.current, completions.current)
    }
}

@Suite("The documented call sites")
struct CallSiteTests {
    @Test("the README's counter compiles and works as written")
    func readmeCounter() throws {
        let screen = Screen()
        let (now, same, seen, completions) = try screen.run()
        #expect(now == 3)
        #expect(same)
        #expect(seen == [2, 3])
        #expect(completions == 1)
        #expect(screen.store.state.count == 4)
        #expect(screen.dispatcher.store(with: "counter") == nil)
    }

    @Test("Dispatcher.default exists and the default mode is .async")
    func defaultDispatcher() throws {
        let store = Store<Counter, CounterAction>(identifier: "call-site-default", reducer: CounterReducer())
        try Dispatcher.default.register(store: store)
        defer { Dispatcher.default.unregister(identifier: "call-site-default") }
        let done = Gate()
        let transaction = Dispatcher.default.dispatch(CounterAction.increase, to: "call-site-default") { _ in
            done.open()
        }
        #expect(transaction.mode == .async)
        #expect(done.wait())
        #expect(store.state.count == 1)
    }
}
