import DispatchStore
import Foundation

/// R1, R2, O1, O2: what registering stores and subscribing observers cost at service scale.
///
/// Each runs at 1,000, 10,000 and 100,000 (times `scale`), so that the totals show they grow
/// linearly: ns/op should stay flat from one size to the next. The goals sit on the sizes the goals
/// name: R1 at 10,000 stores, R2, O1 and O2 at 100,000.
func scaleScenarios(scale: Double) -> [Scenario] {
    let sizes = [1_000, 10_000, 100_000]
    func id(_ name: String, _ size: Int) -> String {
        "\(name)-\(size / 1_000)K"
    }
    var scenarios: [Scenario] = []
    for size in sizes {
        let limit = size == 10_000 ? Scenario.Limit(seconds: 1 * scale, megabytes: 50) : nil
        scenarios.append(registrationScenario(id: id("R1", size), stores: scaled(size, scale), limit: limit))
    }
    for size in sizes {
        let limit = size == 100_000 ? Scenario.Limit(seconds: nil, megabytes: 20) : nil
        scenarios.append(churnScenario(id: id("R2", size), cycles: scaled(size, scale), limit: limit))
    }
    for size in sizes {
        let limit = size == 100_000 ? Scenario.Limit(seconds: 1 * scale, megabytes: nil) : nil
        scenarios.append(subscribeScenario(id: id("O1", size), subscriptions: scaled(size, scale), limit: limit))
    }
    for size in sizes {
        let limit = size == 100_000 ? Scenario.Limit(seconds: 1 * scale, megabytes: nil) : nil
        scenarios.append(cancelScenario(id: id("O2", size), subscriptions: scaled(size, scale), limit: limit))
    }
    return scenarios.map { scenario in
        var shown = scenario
        shown.showsTotal = true
        return shown
    }
}

/// R1: register `stores` stores, then one `.sync` broadcast that reaches them all.
private func registrationScenario(id: String, stores count: Int, limit: Scenario.Limit?) -> Scenario {
    // The first repetition (the warm-up) measures the memory, from a trimmed heap; the timed ones
    // reuse what it freed, without the page faults a trimmed heap costs.
    var repetitions = 0
    var measured: (growth: Double, notes: String)?
    return Scenario(
        id: id,
        summary: "register \(count.formatted()) stores, then one .sync broadcast reaching all (per store)",
        operations: count,
        baseline: nil,
        target: nil,
        limit: limit
    ) {
        let dispatcher = Dispatcher()
        let stores = (0..<count).map {
            Store<Counter, Increment>(identifier: "tenant-\($0)", reducer: IncrementReducer())
        }
        repetitions += 1
        let memory = MemoryProbe()
        memory.start(trimming: repetitions == 1)
        return Repetition(
            run: {
                for store in stores {
                    try! dispatcher.register(store: store)
                }
                dispatcher.dispatch(Increment.one, mode: .sync)
                memory.stop()
                if measured == nil { measured = (memory.peakGrowth, memory.notes + " in the first repetition") }
            },
            check: {
                let reached = stores.filter { $0.state.count == 1 }.count
                return reached == count ? nil : "the broadcast reached \(reached) of \(count) stores"
            },
            notes: { measured?.notes ?? "" },
            memoryGrowth: { measured?.growth }
        )
    }
}

/// R2: `cycles` times, register a new store, dispatch `.sync` to it, unregister it, beside nine
/// stores that stay; memory must stay flat.
private func churnScenario(id: String, cycles: Int, limit: Scenario.Limit?) -> Scenario {
    Scenario(
        id: id,
        summary: "\(cycles.formatted()) cycles: register a store, .sync dispatch, unregister; 9 others stay",
        operations: cycles,
        baseline: nil,
        target: nil,
        limit: limit
    ) {
        let dispatcher = Dispatcher()
        let residents = (0..<9).map {
            Store<Counter, Increment>(identifier: "resident-\($0)", reducer: IncrementReducer())
        }
        for store in residents {
            try! dispatcher.register(store: store)
        }
        let memory = MemoryProbe()
        // A leak cannot hide in memory freed earlier: no trimming needed.
        memory.start(trimming: false)
        let visited = Tally()
        return Repetition(
            run: {
                for cycle in 0..<cycles {
                    let identifier = "session-\(cycle)"
                    let store = Store<Counter, Increment>(identifier: identifier, reducer: IncrementReducer())
                    try! dispatcher.register(store: store)
                    dispatcher.dispatch(Increment.one, mode: .sync)
                    visited.count &+= store.state.count
                    dispatcher.unregister(identifier: identifier)
                }
                memory.stop()
            },
            check: {
                let counts = residents.map(\.state.count)
                guard counts.allSatisfy({ $0 == cycles }) else {
                    return "resident counts \(counts), expected \(cycles)"
                }
                guard dispatcher.stores.count == residents.count else {
                    return "\(dispatcher.stores.count) stores left registered, expected \(residents.count)"
                }
                return visited.count == cycles ? nil : "\(visited.count) of \(cycles) new stores were reached"
            },
            notes: { memory.notes },
            memoryGrowth: { memory.residentGrowth }
        )
    }
}

/// O1: `subscriptions` subscriptions to one store.
private func subscribeScenario(id: String, subscriptions count: Int, limit: Scenario.Limit?) -> Scenario {
    Scenario(
        id: id,
        summary: "\(count.formatted()) subscribe calls on one store (per subscription)",
        operations: count,
        baseline: nil,
        target: nil,
        limit: limit
    ) {
        let (dispatcher, store) = counterStore()
        let tally = Tally()
        var subscriptions: [Subscription] = []
        subscriptions.reserveCapacity(count)
        return Repetition(
            run: {
                for _ in 0..<count {
                    subscriptions.append(store.subscribe { _, _ in tally.count &+= 1 })
                }
            },
            check: {
                dispatcher.dispatch(Increment.one, mode: .sync)
                return tally.count == count ? nil : "one dispatch called \(tally.count) of \(count) observers"
            }
        )
    }
}

/// O2: of `subscriptions` subscriptions, cancel nine in ten (scattered), then one dispatch, which
/// must call exactly the tenth left.
private func cancelScenario(id: String, subscriptions count: Int, limit: Scenario.Limit?) -> Scenario {
    Scenario(
        id: id,
        summary: "cancel 90% of \(count.formatted()) subscriptions, then one dispatch (per subscription)",
        operations: count,
        baseline: nil,
        target: nil,
        limit: limit
    ) {
        let (dispatcher, store) = counterStore()
        let tally = Tally()
        let subscriptions = (0..<count).map { _ in store.subscribe { _, _ in tally.count &+= 1 } }
        let kept = (0..<count).filter { $0 % 10 == 3 }.count
        return Repetition(
            run: {
                for (index, subscription) in subscriptions.enumerated() where index % 10 != 3 {
                    subscription.cancel()
                }
                dispatcher.dispatch(Increment.one, mode: .sync)
            },
            check: {
                withExtendedLifetime(subscriptions) {
                    tally.count == kept
                        ? nil : "the dispatch called \(tally.count) observers, expected the \(kept) left"
                }
            }
        )
    }
}

/// Measures how much memory a run takes.
///
/// Its peak above the resident size when it started (Linux's `VmHWM`, reset for the run), and the
/// resident size it leaves. Call `start(trimming:)` before the timed part and `stop()` at its end.
final class MemoryProbe {
    private var before = 0
    private var peak: Int?
    private var after = 0

    /// Takes the starting point.
    ///
    /// - Parameter trimming: Whether to hand the memory freed earlier back to the system first, so
    ///   that the run's growth does not hide in it. The run then pays page faults for the memory it
    ///   takes: time it without trimming.
    func start(trimming: Bool) {
        if trimming { trimHeap() }
        before = residentMemory()
        peak = resetPeakMemory() ? nil : before
    }

    func stop() {
        after = residentMemory()
        peak = peakMemory() ?? max(peak ?? 0, after)
    }

    /// The peak's growth in MB over the run.
    var peakGrowth: Double {
        Double((peak ?? after) - before) / 1_048_576
    }

    /// The resident size's growth in MB from the start to the end of the run.
    var residentGrowth: Double {
        Double(after - before) / 1_048_576
    }

    var notes: String {
        String(format: "peak %+.1f MB, then %+.1f MB resident", peakGrowth, residentGrowth)
    }
}

/// Returns the heap's free memory to the system where the C library can (glibc's `malloc_trim`).
func trimHeap() {
    typealias Trim = @convention(c) (Int) -> Int32
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
    _ = unsafeBitCast(symbol, to: Trim.self)(0)
}

/// Resets the process's peak resident size (`VmHWM`) to its current size; `false` where impossible.
func resetPeakMemory() -> Bool {
    guard let file = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
    defer { try? file.close() }
    return (try? file.write(contentsOf: Data("5".utf8))) != nil
}

/// The process's peak resident size in bytes since the last reset, where the system tells it.
func peakMemory() -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kilobytes = line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        return kilobytes.map { $0 * 1_024 }
    }
    return nil
}
