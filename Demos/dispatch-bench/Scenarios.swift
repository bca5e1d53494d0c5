import DispatchStore
import Foundation
import TodoCore

struct Counter: StateType {
    var count = 0
}

enum Increment: ActionType {
    case one
}

final class IncrementReducer: Reducer<Counter, Increment> {
    override func reduce(_ action: Increment, into state: inout Counter) {
        state.count &+= 1
    }
}

/// Ten counters; `Bump(index)` increments one.
struct Counters: StateType {
    var values = [Int](repeating: 0, count: 10)
}

struct Bump: ActionType {
    let index: Int
}

final class BumpReducer: Reducer<Counters, Bump> {
    override func reduce(_ action: Bump, into state: inout Counters) {
        state.values[action.index] &+= 1
    }
}

/// Ten key paths `\.values[i]`, built once.
let counterPaths: [any KeyPath<Counters, Int> & Sendable] = (0..<10).map { \Counters.values[$0] }

func libraryScenarios(scale: Double) -> [Scenario] {
    let million = scaled(1_000_000, scale)
    let hundredThousand = scaled(100_000, scale)
    let perThread = scaled(250_000, scale)
    return [
        Scenario(
            id: "S1",
            summary: ".sync dispatches of an increment to one store, no observers",
            operations: million,
            baseline: "B1",
            target: 10
        ) {
            let (dispatcher, store) = counterStore()
            return Repetition(
                run: {
                    for _ in 0..<million {
                        dispatcher.dispatch(Increment.one, mode: .sync)
                    }
                },
                check: { expect(store.state.count, million, "count") }
            )
        },
        Scenario(
            id: "S2",
            summary: ".sync dispatches, 1,000 observers of the whole state",
            operations: hundredThousand,
            baseline: "B2",
            target: 1.5
        ) {
            let (dispatcher, store) = counterStore()
            let tally = Tally()
            let subscriptions = (0..<1_000).map { _ in store.subscribe { _, _ in tally.count &+= 1 } }
            return Repetition(
                run: {
                    for _ in 0..<hundredThousand {
                        dispatcher.dispatch(Increment.one, mode: .sync)
                    }
                },
                check: {
                    withExtendedLifetime(subscriptions) {
                        expect(tally.count, hundredThousand * 1_000, "observer calls")
                    }
                }
            )
        },
        Scenario(
            id: "S3",
            summary: ".sync dispatches, 1,000 key-path observers of 10 counters, 100 called per dispatch",
            operations: hundredThousand,
            baseline: "B3",
            target: 2
        ) {
            let dispatcher = Dispatcher()
            let store = Store<Counters, Bump>(identifier: "counters", reducer: BumpReducer())
            try! dispatcher.register(store: store)
            let tally = Tally()
            let subscriptions = (0..<1_000).map { index in
                store.subscribe(counterPaths[index % 10]) { _ in tally.count &+= 1 }
            }
            let actions = (0..<10).map(Bump.init)
            return Repetition(
                run: {
                    for index in 0..<hundredThousand {
                        dispatcher.dispatch(actions[index % 10], mode: .sync)
                    }
                },
                check: {
                    withExtendedLifetime(subscriptions) { expect(tally.count, hundredThousand * 100, "observer calls") }
                }
            )
        },
        Scenario(
            id: "S4",
            summary: ".serial dispatches from one thread, until all finished",
            operations: million,
            baseline: "B1",
            target: 40
        ) {
            let (dispatcher, store) = counterStore()
            return Repetition(
                run: {
                    for _ in 0..<million {
                        dispatcher.dispatch(Increment.one, mode: .serial)
                    }
                    dispatcher.waitUntilIdle()
                },
                check: { expect(store.state.count, million, "count") }
            )
        },
        Scenario(
            id: "S5",
            summary: "4 threads x .async dispatches over 4 stores, until all finished",
            operations: perThread * 4,
            baseline: "B1",
            target: 40
        ) {
            let dispatcher = Dispatcher()
            let stores = (0..<4).map { index in
                Store<Counter, Increment>(identifier: "store\(index)", reducer: IncrementReducer())
            }
            for store in stores {
                try! dispatcher.register(store: store)
            }
            let identifiers = stores.map(\.identifier)
            return Repetition(
                run: {
                    dispatchFromFourThreads(Increment.self, perThread: perThread, to: identifiers, of: dispatcher)
                },
                check: { expect(stores.map(\.state.count).reduce(0, +), perThread * 4, "total count") }
            )
        },
        Scenario(
            id: "S6",
            summary: ".mainThread dispatches from a background thread while the main thread runs its loop",
            operations: hundredThousand,
            baseline: "B1",
            target: nil
        ) {
            let (dispatcher, store) = counterStore()
            return Repetition(
                run: {
                    let done = DispatchSemaphore(value: 0)
                    Thread.detachNewThread {
                        for _ in 0..<hundredThousand {
                            dispatcher.dispatch(Increment.one, mode: .mainThread)
                        }
                        dispatcher.dispatch(Increment.one, mode: .mainThread) { _ in done.signal() }
                    }
                    while done.wait(timeout: .now()) == .timedOut {
                        _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.001))
                    }
                },
                check: { expect(store.state.count, hundredThousand + 1, "count") }
            )
        },
        Scenario(
            id: "S7",
            summary: ".sync dispatches handled by 10 stores chained by waitsFor",
            operations: hundredThousand,
            baseline: "S1",
            target: 12
        ) {
            let dispatcher = Dispatcher()
            let stores = (0..<10).map { index in
                Store<Counter, Increment>(
                    identifier: "chain\(index)",
                    reducer: IncrementReducer(),
                    waitsFor: index == 0 ? [] : ["chain\(index - 1)"]
                )
            }
            for store in stores.reversed() {
                try! dispatcher.register(store: store)
            }
            return Repetition(
                run: {
                    for _ in 0..<hundredThousand {
                        dispatcher.dispatch(Increment.one, mode: .sync)
                    }
                },
                check: {
                    stores.allSatisfy { $0.state.count == hundredThousand }
                        ? nil : "counts \(stores.map(\.state.count)), expected \(hundredThousand) each"
                }
            )
        },
        recorderScenario(dispatches: hundredThousand),
    ]
}

/// S8: dispatches recorded by a `RecorderMiddleware(limit: 1000)` on a 1,000-item todo list.
func recorderScenario(dispatches: Int) -> Scenario {
    Scenario(
        id: "S8",
        summary: "dispatches recorded by RecorderMiddleware(limit: 1000) on a 1,000-item todo list",
        operations: dispatches,
        baseline: "B1",
        target: nil
    ) {
        let items = (1...1_000).map { TodoItem(id: $0, title: "item number \($0)") }
        let app = try! TodoApp(items: items, historyLimit: 1_000)
        let actions = (0..<1_000).map { TodoAction.toggle(id: $0 + 1) }
        var memoryAtLimit = 0
        var memoryAtEnd = 0
        return Repetition(
            run: {
                for index in 0..<dispatches {
                    app.dispatcher.dispatch(actions[index % 1_000], mode: .sync)
                    if index == min(dispatches, 2_000) - 1 { memoryAtLimit = residentMemory() }
                }
                memoryAtEnd = residentMemory()
            },
            check: {
                let expected = min(dispatches + 1, 1_000)
                if app.recorder.count != expected { return "history holds \(app.recorder.count), expected \(expected)" }
                let done = app.list.state.items.filter(\.isDone).count
                let toggles = (0..<1_000).map { item in (dispatches - item + 999) / 1_000 }
                let expectedDone = toggles.filter { $0 % 2 == 1 }.count
                return done == expectedDone ? nil : "\(done) items done, expected \(expectedDone)"
            },
            notes: {
                let growth = Double(memoryAtEnd - memoryAtLimit) / 1_048_576
                return String(
                    format: "RSS %.1f MB once the history is full, %+.1f MB after the rest",
                    Double(memoryAtLimit) / 1_048_576,
                    growth
                )
            }
        )
    }
}

/// An action the four-thread scenarios (S5, S5r) make for each index.
protocol IndexedAction: ActionType {
    init(index: Int)
}

extension Increment: IndexedAction {
    init(index: Int) {
        self = .one
    }
}

/// S5 and S5r: four threads each dispatch `perThread` actions `.async`, the `index`th of them
/// `Action(index: index)` to `identifiers[(index + thread) % 4]`; returns once all finished.
func dispatchFromFourThreads<Action: IndexedAction>(
    _: Action.Type,
    perThread: Int,
    to identifiers: [String],
    of dispatcher: Dispatcher
) {
    let group = DispatchGroup()
    for thread in 0..<4 {
        group.enter()
        Thread.detachNewThread {
            for index in 0..<perThread {
                dispatcher.dispatch(Action(index: index), to: identifiers[(index + thread) % 4], mode: .async)
            }
            group.leave()
        }
    }
    group.wait()
    dispatcher.waitUntilIdle()
}

func counterStore() -> (Dispatcher, Store<Counter, Increment>) {
    let dispatcher = Dispatcher()
    let store = Store<Counter, Increment>(identifier: "counter", reducer: IncrementReducer())
    try! dispatcher.register(store: store)
    return (dispatcher, store)
}

func expect(_ value: Int, _ expected: Int, _ what: String) -> String? {
    value == expected ? nil : "\(what) \(value), expected \(expected)"
}

/// The resident set size in bytes (Linux: /proc/self/statm; elsewhere 0).
func residentMemory() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
