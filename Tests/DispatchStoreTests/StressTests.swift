import DispatchStore
import Foundation
import TestSupport
import Testing

@Suite("Stress")
struct StressTests {
    @Test("4 threads x 50,000 dispatches of mixed modes across 4 stores: exact totals, every completion once")
    func mixedModes() async throws {
        let dispatcher = Dispatcher()
        let identifiers = ["s0", "s1", "s2", "s3"]
        let stores = identifiers.enumerated().map { index, identifier in
            makeCounterStore(identifier, reducer: index.isMultiple(of: 2) ? InlineCounterReducer() : CounterReducer())
        }
        for store in stores {
            try dispatcher.register(store: store)
        }
        let threads = 4
        let perThread = 50_000
        let modes: [DispatchMode] = [.async, .serial, .sync, .async, .mainThread, .serial, .sync]
        let completions = Shared<[UInt64: Int]>([:])
        let done = Countdown(threads * perThread)
        let (finished, idle) = await offThePool {
            concurrently(threads) { thread in
                for index in 0..<perThread {
                    let mode = modes[(index + thread) % modes.count]
                    // Every 10th dispatch reaches all stores; the others one store each.
                    let target: String? = index % 10 == 9 ? nil : identifiers[(index + thread) % 4]
                    dispatcher.dispatch(CounterAction.add(index % 7 + 1), to: target, mode: mode) { result in
                        completions.withLock { $0[result.transaction.id, default: 0] += 1 }
                        done.tick()
                    }
                }
            }
            return (done.wait(seconds: 600), dispatcher.waitUntilIdle(timeout: .seconds(60)))
        }
        #expect(finished)
        #expect(idle)

        var expected = [0, 0, 0, 0]
        for thread in 0..<threads {
            for index in 0..<perThread {
                let amount = index % 7 + 1
                if index % 10 == 9 {
                    for store in 0..<4 { expected[store] += amount }
                } else {
                    expected[(index + thread) % 4] += amount
                }
            }
        }
        #expect(stores.map(\.state.count) == expected)
        let counts = completions.current
        #expect(counts.count == threads * perThread)
        #expect(counts.values.allSatisfy { $0 == 1 })
    }
}
