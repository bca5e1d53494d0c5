// The samples of Docs/Architecture.md.

import DispatchStore
import Testing

// sample: typed-access
extension Dispatcher {
    var counter: Store<Counter, CounterAction>? {
        store(with: "counter") as? Store<Counter, CounterAction>
    }
}
// end-sample

@Suite("Docs: architecture")
struct ArchitectureSamples {
    @Test("the typed accessor finds the registered store")
    func typedAccess() throws {
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
        try dispatcher.register(store: store)
        #expect(dispatcher.counter === store)
    }
}
