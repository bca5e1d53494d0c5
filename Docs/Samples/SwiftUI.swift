// The samples of Docs/SwiftUI.md. The view compiles where SwiftUI exists (Apple platforms); the
// rest, the screen's model and its test, compiles and runs everywhere, Linux included.

#if canImport(Observation)
import DispatchStore
import Observation
import Testing
#if canImport(SwiftUI)
import SwiftUI
#endif

enum SwiftUISamples {
    // sample: model
    /// What the counter screen shows and does, without SwiftUI.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    @MainActor
    final class CounterScreen {
        let dispatcher: Dispatcher
        let counter: ObservedStore<Counter, CounterAction>

        init(dispatcher: Dispatcher, store: Store<Counter, CounterAction>) {
            self.dispatcher = dispatcher
            self.counter = ObservedStore(store)
        }

        var title: String {
            "Count: \(counter.state.count)"
        }

        func add(_ amount: Int) {
            dispatcher.dispatch(CounterAction.add(amount))
        }
    }
    // end-sample
}

#if canImport(SwiftUI)
extension SwiftUISamples {
    // sample: view
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
    struct CounterView: View {
        let screen: CounterScreen

        var body: some View {
            VStack {
                Text(screen.title)  // reads counter.state: re-rendered when it changes
                Button("Add one") { screen.add(1) }
            }
        }
    }
    // end-sample
}
#endif

extension SwiftUISamples {
    @Suite("Docs: SwiftUI")
    struct Tests {
        // sample: test
        @Test @MainActor func titleFollowsTheCount() async throws {
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // hidden
            let dispatcher = Dispatcher()
            let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
            try dispatcher.register(store: store)
            let screen = CounterScreen(dispatcher: dispatcher, store: store)
            #expect(screen.title == "Count: 0")

            // What SwiftUI does for a view's body: track what it reads, and hear of the next change.
            await withCheckedContinuation { changed in
                withObservationTracking {
                    _ = screen.title
                } onChange: {
                    changed.resume()
                }
                screen.add(2)
            }
            #expect(screen.title == "Count: 2")
        }
        // end-sample

        // sample: burst
        @Test @MainActor func aBurstIsOneUpdate() async throws {
            guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, *) else { return }  // hidden
            let dispatcher = Dispatcher()
            let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
            try dispatcher.register(store: store)
            let counter = ObservedStore(store)

            for _ in 0..<100 {
                dispatcher.dispatch(CounterAction.increase, mode: .sync)
            }
            print(store.state.count, counter.state.count)  // 100 0: the update comes in a later turn

            await withCheckedContinuation { changed in
                withObservationTracking {
                    _ = counter.state
                } onChange: {
                    changed.resume()
                }
            }
            print(counter.state.count)  // 100, set once
            #expect(counter.state.count == 100)  // hidden
        }
        // end-sample
    }
}
#endif
