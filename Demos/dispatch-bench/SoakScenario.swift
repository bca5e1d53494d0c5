import DispatchStore
import DispatchStoreJournal
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// K1, the soak: 60 s of mixed load on one dispatcher. Four threads dispatch in every mode to four
// stores; observers subscribe and cancel; stores register, take a dispatch and unregister; a
// recorder moves back and forth; an action log writes every transaction; `perform` calls are
// cancelled at random. At the end every total is exact, and resident memory after the first 10 s
// grew less than 5 MB.

struct SoakState: StateType, Codable {
    var total = 0
}

enum SoakAction: ActionType, Codable {
    case add(Int)
}

/// The action of the stores that come and go: another type, so that broadcasts miss them.
enum SoakVisit: ActionType, Codable {
    case visit
}

final class SoakVisitReducer: Reducer<SoakState, SoakVisit> {
    override func reduce(_ action: SoakVisit, into state: inout SoakState) {
        state.total &+= 1
    }
}

/// Adds, and counts every action it applies.
final class SoakReducer: Reducer<SoakState, SoakAction> {
    let applied = Locked(0)

    override func reduce(_ action: SoakAction, into state: inout SoakState) {
        guard case .add(let amount) = action else { return }
        state.total &+= amount
        applied.withLock { $0 += 1 }
    }
}

/// The counts the soak checks, each kept where it happens.
private final class SoakTotals: Sendable {
    /// Dispatches made and completions received.
    let dispatched = Locked(0)
    let completed = Locked(0)
    /// Stores' applications, summed over every result (dispatch, perform, registry churn).
    let handled = Locked(0)
    /// Results with at least one store applying the action: the lines the log must hold.
    let loggable = Locked(0)
    /// Observer calls with an action, per permanent store, and subscriptions made and ended.
    let delivered = Locked([Int](repeating: 0, count: 4))
    let subscribed = Locked(0)
    let cancelled = Locked(0)
    /// Temporary stores registered and unregistered.
    let registered = Locked(0)
    let unregistered = Locked(0)
    /// `perform` calls started and returned.
    let performed = Locked((started: 0, returned: 0))
    /// Recorder moves that moved.
    let moves = Locked(0)
    /// Anything that went wrong.
    let problems = Locked([String]())

    func count(_ result: DispatchResult) {
        let applied = result.outcomes.filter { $0.sequenceNumber != nil }.count
        handled.withLock { $0 += applied }
        if applied > 0 { loggable.withLock { $0 += 1 } }
    }
}

func soakScenarios(scale: Double) -> [Scenario] {
    let seconds = 60 * scale
    var scenario = Scenario(
        id: "K1",
        summary: "soak: \(String(format: "%g", seconds)) s of mixed load, every mode from 4 threads, observers, "
            + "registry churn, a recorder moving, an action log, cancelled performs (goals: exact totals, "
            + "memory growth under 5 MB after the first 10 s)",
        operations: 1,
        baseline: nil,
        target: nil,
        limit: Scenario.Limit(seconds: nil, megabytes: 5)
    ) {
        var check: () -> String? = { "not run" }
        var notes = ""
        var growth: Double?
        return Repetition(
            run: { (check, notes, growth) = soak(seconds: seconds) },
            check: { check() },
            notes: { notes },
            memoryGrowth: { growth }
        )
    }
    scenario.showsTotal = true
    return [scenario]
}

/// Runs the soak for `seconds`; returns its check, its notes and the memory growth after the first
/// 10 s (the first sixth of a shorter run), in MB.
private func soak(seconds: Double) -> (() -> String?, String, Double?) {
    let dispatcher = Dispatcher()
    let reducers = (0..<4).map { _ in SoakReducer() }
    let stores = reducers.enumerated().map { index, reducer in
        Store<SoakState, SoakAction>(identifier: "p\(index)", reducer: reducer)
    }
    for store in stores {
        try! dispatcher.register(store: store)
    }
    let totals = SoakTotals()
    let logPath = benchDirectory().appendingPathComponent("soak-\(UUID().uuidString).jsonl").path
    let log = try! ActionLogMiddleware(path: logPath, checksums: .none)
    dispatcher.register(middleware: log)
    let recorder = RecorderMiddleware(limit: 50)
    dispatcher.register(middleware: recorder)
    let observers = stores.enumerated().map { index, store in
        store.subscribe { _, action in
            if action != nil { totals.delivered.withLock { $0[index] += 1 } }
        }
    }

    let start = Date()
    let deadline = start.addingTimeInterval(seconds)
    let warm = start.addingTimeInterval(min(10, seconds / 6))
    let workers = DispatchGroup()
    func worker(_ body: @escaping @Sendable () -> Void) {
        workers.enter()
        Thread.detachNewThread {
            body()
            workers.leave()
        }
    }
    let modes: [DispatchMode] = [.sync, .async, .serial, .mainThread]
    for thread in 0..<4 {
        worker {
            var random = SystemRandomNumberGenerator()
            var round = 0
            while Date() < deadline {
                for _ in 0..<64 {
                    let mode = modes[Int.random(in: 0..<4, using: &random)]
                    let target = Int.random(in: 0..<5, using: &random)
                    totals.dispatched.withLock { $0 += 1 }
                    dispatcher.dispatch(SoakAction.add(1), to: target < 4 ? "p\(target)" : nil, mode: mode) {
                        totals.count($0)
                        totals.completed.withLock { $0 += 1 }
                    }
                }
                round += 1
                // Producers must not outrun the stores: the queues stay short.
                if round % (thread + 1) == 0 { dispatcher.waitUntilIdle() }
            }
        }
    }
    worker {
        var random = SystemRandomNumberGenerator()
        while Date() < deadline {
            let store = stores[Int.random(in: 0..<4, using: &random)]
            let subscription = store.subscribe { _, _ in }
            totals.subscribed.withLock { $0 += 1 }
            subscription.cancel()
            totals.cancelled.withLock { $0 += 1 }
        }
    }
    worker {
        var number = 0
        while Date() < deadline {
            number += 1
            let identifier = "t\(number)"
            let store = Store<SoakState, SoakVisit>(identifier: identifier, reducer: SoakVisitReducer())
            do {
                try dispatcher.register(store: store)
            } catch {
                totals.problems.withLock { $0.append("registering \(identifier): \(error)") }
                continue
            }
            totals.registered.withLock { $0 += 1 }
            dispatcher.dispatch(SoakVisit.visit, to: identifier, mode: .sync) { totals.count($0) }
            if dispatcher.unregister(identifier: identifier) !== store {
                totals.problems.withLock { $0.append("unregistering \(identifier) gave another store") }
            }
            totals.unregistered.withLock { $0 += 1 }
        }
    }
    worker {
        var random = SystemRandomNumberGenerator()
        while Date() < deadline {
            if Bool.random(using: &random) ? recorder.previous() : recorder.next() {
                totals.moves.withLock { $0 += 1 }
            }
            usleep(1_000)  // pacing, not ordering: a move a millisecond
        }
    }
    workers.enter()
    Task.detached {
        while Date() < deadline {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<32 {
                    totals.performed.withLock { $0.started += 1 }
                    let task = Task {
                        let result = await dispatcher.perform(SoakAction.add(1), to: "p\(index % 4)")
                        totals.count(result)
                        totals.performed.withLock { $0.returned += 1 }
                    }
                    if index % 3 == 0 { task.cancel() }
                    group.addTask { await task.value }
                }
            }
        }
        workers.leave()
    }

    // The main thread runs the main queue for `.mainThread` dispatches, and samples memory.
    var settled: Int?
    var highest = 0
    while workers.wait(timeout: .now()) == .timedOut {
        _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
        let resident = residentMemory()
        if Date() >= warm {
            if settled == nil { settled = resident }
            highest = max(highest, resident)
        }
    }
    while !dispatcher.waitUntilIdle(timeout: .zero) {
        _ = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.01))
    }
    for observer in observers {
        observer.cancel()
    }
    let growth = settled.map { Double(highest - $0) / 1_048_576 }
    log.close()
    var entries = 0
    let read = Result {
        try ActionLog.forEachEntry(in: logPath, actionTypes: [SoakAction.self, SoakVisit.self]) { _ in entries += 1 }
    }
    try? FileManager.default.removeItem(atPath: logPath)
    try? FileManager.default.removeItem(atPath: logPath + ".lock")

    let applied = reducers.map { $0.applied.withLock { $0 } }
    let temporaryApplied = totals.handled.withLock { $0 } - applied.reduce(0, +)
    let notes =
        "\(totals.dispatched.withLock { $0 }) dispatches, \(totals.performed.withLock { $0.started }) performs, "
        + "\(totals.registered.withLock { $0 }) stores registered, \(totals.subscribed.withLock { $0 }) subscriptions, "
        + "\(totals.moves.withLock { $0 }) recorder moves, \(entries) log lines; "
        + String(format: "memory after the first 10 s: %+.1f MB", growth ?? .nan)
    let check: () -> String? = {
        var wrong = totals.problems.withLock { $0 }
        func expect(_ value: Int, _ expected: Int, _ what: String) {
            if value != expected { wrong.append("\(what): \(value), expected \(expected)") }
        }
        expect(totals.completed.withLock { $0 }, totals.dispatched.withLock { $0 }, "completions")
        let performed = totals.performed.withLock { $0 }
        expect(performed.returned, performed.started, "performs returned")
        expect(temporaryApplied, totals.registered.withLock { $0 }, "actions applied by the registered stores")
        for index in 0..<4 {
            expect(totals.delivered.withLock { $0[index] }, applied[index], "observer calls of p\(index)")
        }
        expect(totals.cancelled.withLock { $0 }, totals.subscribed.withLock { $0 }, "subscriptions cancelled")
        expect(totals.unregistered.withLock { $0 }, totals.registered.withLock { $0 }, "stores unregistered")
        expect(log.writtenCount, totals.loggable.withLock { $0 }, "log lines written")
        expect(log.failureCount, 0, "log failures")
        if case .failure(let error) = read { wrong.append("reading the log: \(error)") }
        expect(entries, log.writtenCount, "log lines read")
        expect(dispatcher.stores.count, 4, "stores left registered")
        return wrong.isEmpty ? nil : wrong.joined(separator: "; ")
    }
    return (check, notes, growth)
}
