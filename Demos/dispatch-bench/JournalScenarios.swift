import DispatchStore
import DispatchStoreJournal
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// L1–L3: reading, replaying and recovering durable state. Their goals are absolute (L1 and L2:
// under 1 s for a 50 MB log, peak memory growth under 50 MB) or a ratio (L3: recovery from a
// 200,000-action history within twice the time from a 20,000-action one).

/// A ledger of 1,000 accounts: its state stays the same size however long the history.
struct Ledger: StateType, Codable, Equatable {
    var balances = [Int](repeating: 0, count: 1_000)
    var entries = 0
    /// Depends on the order of the entries, so that a replay in another order shows.
    var chain: UInt64 = 17
}

enum LedgerEntry: ActionType, Codable {
    case deposit(account: Int, cents: Int, memo: String)
    case withdraw(account: Int, cents: Int, memo: String)
}

final class LedgerReducer: Reducer<Ledger, LedgerEntry> {
    override func reduce(_ action: LedgerEntry, into state: inout Ledger) {
        switch action {
        case .deposit(let account, let cents, _):
            state.balances[account] &+= cents
            state.chain = state.chain &* 31 &+ UInt64(cents)
        case .withdraw(let account, let cents, _):
            state.balances[account] &-= cents
            state.chain = state.chain &* 37 &+ UInt64(cents)
        }
        state.entries += 1
    }
}

private let ledgerIdentifiers = ["eu", "us", "asia", "audit"]

/// Four ledgers behind one dispatcher.
func ledgerDispatcher() -> (Dispatcher, [Store<Ledger, LedgerEntry>]) {
    let dispatcher = Dispatcher()
    let stores = ledgerIdentifiers.map { Store<Ledger, LedgerEntry>(identifier: $0, reducer: LedgerReducer()) }
    for store in stores {
        try! dispatcher.register(store: store)
    }
    return (dispatcher, stores)
}

/// The `index`th entry: a broadcast every fourth, otherwise one store.
func ledgerEntry(_ index: Int) -> (LedgerEntry, String?) {
    let cents = (index &* 7_919) % 100_000
    let memo = "invoice \(index % 9_973) settled"
    let entry: LedgerEntry =
        index % 3 == 0
        ? .withdraw(account: index % 1_000, cents: cents, memo: memo)
        : .deposit(account: (index * 13) % 1_000, cents: cents, memo: memo)
    return (entry, index % 4 == 0 ? nil : ledgerIdentifiers[index % 3])
}

/// A log of `bytes` bytes written once per run of the benchmark, with the final states it leads to.
final class PreparedLog: Sendable {
    /// The logs prepared so far, by size.
    private static let logs = Locked([Int: PreparedLog]())

    let path: String
    let lines: Int
    let states: [Ledger]

    private init(path: String, lines: Int, states: [Ledger]) {
        self.path = path
        self.lines = lines
        self.states = states
    }

    static func of(bytes: Int) -> PreparedLog {
        if let log = logs.value[bytes] { return log }
        let path = benchDirectory().appendingPathComponent("ledger-\(bytes).jsonl").path
        let (dispatcher, stores) = ledgerDispatcher()
        let middleware = try! ActionLogMiddleware(path: path, appending: false, checksums: .every(1_000))
        dispatcher.register(middleware: middleware)
        var index = 0
        var size = 0
        while size < bytes {
            for _ in 0..<1_000 {
                let (entry, target) = ledgerEntry(index)
                dispatcher.dispatch(entry, to: target, mode: .sync)
                index += 1
            }
            size = Int((try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0)
        }
        middleware.close()
        let log = PreparedLog(path: path, lines: index, states: stores.map(\.state))
        logs.withLock { $0[bytes] = log }
        return log
    }

    /// Removes the files of every prepared log.
    static func removeAll() {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dispatch-bench-\(getpid())")
        try? FileManager.default.removeItem(at: directory)
    }
}

func journalScenarios(scale: Double) -> [Scenario] {
    let logBytes = scaled(50_000_000, scale)
    let snapshotEvery = scaled(1_000, scale)
    atexit { PreparedLog.removeAll() }
    return [
        logScenario(
            id: "L1",
            summary: "read a 50 MB action log, entry by entry (goals: under 1 s, memory growth under 50 MB)",
            bytes: logBytes,
            limit: Scenario.Limit(seconds: 1 * scale, megabytes: 50)
        ) { log in
            let summary = try? ActionLog.forEachEntry(in: log.path, actionTypes: [LedgerEntry.self]) { _ in }
            let count = summary?.entryCount ?? -1
            return { expect(count, log.lines, "entries read") }
        },
        logScenario(
            id: "L2",
            summary: "replay a 50 MB action log into 4 stores (goals: under 1 s, memory growth under 50 MB)",
            bytes: logBytes,
            limit: Scenario.Limit(seconds: 1 * scale, megabytes: 50)
        ) { log in
            let (dispatcher, stores) = ledgerDispatcher()
            let report = try? ActionLog.replay(contentsOf: log.path, into: dispatcher, actionTypes: [LedgerEntry.self])
            let states = stores.map(\.state)
            return {
                guard let report, report.succeeded else { return "replay failed: \(String(describing: report))" }
                return states == log.states ? nil : "replayed states differ from the live ones"
            }
        },
        recoveryScenario(
            id: "L3B",
            actions: scaled(20_500, scale),
            snapshotEvery: snapshotEvery,
            baseline: nil,
            target: nil
        ),
        recoveryScenario(
            id: "L3",
            actions: scaled(200_500, scale),
            snapshotEvery: snapshotEvery,
            baseline: "L3B",
            target: 2
        ),
    ]
}

/// A journal directory with a history of `actions` actions, left as a crash leaves it (no last
/// snapshot), prepared once per run of the benchmark, with the states it holds.
final class PreparedJournal: Sendable {
    private static let journals = Locked([Int: PreparedJournal]())

    let path: String
    let states: [Ledger]

    private init(path: String, states: [Ledger]) {
        self.path = path
        self.states = states
    }

    static func of(actions: Int, snapshotEvery: Int) -> PreparedJournal {
        if let journal = journals.value[actions] { return journal }
        let path = benchDirectory().appendingPathComponent("journal-\(actions)").path
        let (dispatcher, stores) = ledgerDispatcher()
        let journal = try! Journal(directory: path, dispatcher: dispatcher, snapshotEvery: snapshotEvery)
        for index in 0..<actions {
            let (entry, target) = ledgerEntry(index)
            dispatcher.dispatch(entry, to: target, mode: .sync)
        }
        precondition(journal.firstFailure == nil, "dispatch-bench: \(journal.firstFailure!)")
        let prepared = PreparedJournal(path: path, states: stores.map(\.state))
        journals.withLock { $0[actions] = prepared }
        return prepared
    }

    /// A copy of the directory, for one recovery to start from.
    func copy() -> String {
        let target = benchDirectory().appendingPathComponent("copy-\(UUID().uuidString)").path
        try! FileManager.default.copyItem(atPath: path, toPath: target)
        return target
    }
}

/// L3 and its baseline: opening a journal, that is recovering its 4 stores, from `actions` actions.
func recoveryScenario(id: String, actions: Int, snapshotEvery: Int, baseline: String?, target: Double?) -> Scenario {
    var scenario = Scenario(
        id: id,
        summary: "recover 4 stores from a journal of \(actions) actions, a snapshot every \(snapshotEvery)"
            + (baseline == nil ? "" : " (goal: within twice \(baseline!))"),
        operations: 1,
        baseline: baseline,
        target: target
    ) {
        let prepared = PreparedJournal.of(actions: actions, snapshotEvery: snapshotEvery)
        let directory = prepared.copy()
        let (dispatcher, stores) = ledgerDispatcher()
        var journal: Journal?
        return Repetition(
            run: {
                journal = try? Journal(directory: directory, dispatcher: dispatcher, snapshotEvery: snapshotEvery)
            },
            check: {
                defer { try? FileManager.default.removeItem(atPath: directory) }
                guard let journal else { return "the journal did not open" }
                guard journal.recovery.isClean else { return "recovery found problems: \(journal.recovery)" }
                guard journal.recordCount == actions else {
                    return "\(journal.recordCount) records, expected \(actions)"
                }
                return stores.map(\.state) == prepared.states ? nil : "recovered states differ from the live ones"
            },
            notes: {
                guard let recovery = journal?.recovery else { return "" }
                return
                    "snapshot of \(recovery.snapshotRecordCount) records, then \(recovery.replayedRecordCount) replayed"
            }
        )
    }
    scenario.showsTotal = true
    return scenario
}

/// The benchmark's scratch directory, removed when it exits.
func benchDirectory() -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dispatch-bench-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// L1 and L2 (and L1J and L2J): `body` reads a log of `bytes` bytes and returns the check of what it did.
func logScenario(
    id: String,
    summary: String,
    bytes: Int,
    limit: Scenario.Limit,
    body: @escaping (PreparedLog) -> () -> String?
) -> Scenario {
    var scenario = Scenario(id: id, summary: summary, operations: 1, baseline: nil, target: nil, limit: limit) {
        let log = PreparedLog.of(bytes: bytes)
        let memory = MemoryProbe()
        var check: () -> String? = { "not run" }
        return Repetition(
            run: {
                memory.start(trimming: false)
                check = body(log)
                memory.stop()
            },
            check: { check() },
            notes: {
                let size = (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
                return String(format: "%.1f MB, %d lines; ", Double(size) / 1e6, log.lines) + memory.notes
            },
            memoryGrowth: { memory.peakGrowth }
        )
    }
    scenario.showsTotal = true
    return scenario
}
