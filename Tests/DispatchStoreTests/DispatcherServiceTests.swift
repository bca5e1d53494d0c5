import DispatchStore
import Foundation
import TestSupport
import Testing

@Suite("Dispatcher.run(): a service that drains when its task is cancelled")
struct DispatcherServiceTests {
    @Test("cancelling the task shuts the dispatcher down after every queued action finished")
    func cancelDrains() async throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let store = makeCounterStore(reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: store)
        let service = Task { try await dispatcher.run() }
        for _ in 0..<50 {
            dispatcher.dispatch(CounterAction.add(1), mode: .serial)
        }
        #expect(await started.wait())
        service.cancel()
        #expect(store.state.count == 0)
        gate.open()
        try await service.value

        #expect(dispatcher.isShutDown)
        #expect(store.state.count == 50)
        let late = await dispatcher.perform(CounterAction.add(1))
        #expect(late.error?.code == .shutDown)
    }

    @Test("a task cancelled before run() starts returns at once, shut down")
    func alreadyCancelled() async throws {
        let dispatcher = Dispatcher()
        try dispatcher.register(store: makeCounterStore())
        let service = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await dispatcher.run(shutdownTimeout: .seconds(5))
        }
        try await service.value
        #expect(dispatcher.isShutDown)
    }
}
