import DispatchStore
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
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dispatch-bench-\(getpid())")
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("ledger-\(bytes).jsonl").path
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

/// Peak resident memory since the last reset, in bytes (Linux: `VmHWM`, reset through
/// `/proc/self/clear_refs`; elsewhere 0).
struct PeakMemory {
    private let start: Int

    /// Resets the peak to the current resident size and remembers it.
    init() {
        if let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") {
            handle.write(Data("5".utf8))
            handle.closeFile()
        }
        start = residentMemory()
    }

    /// How far the peak rose above the resident size at `init`.
    var growth: Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
            let kilobytes = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return max(0, kilobytes * 1_024 - start)
    }
}

func journalScenarios(scale: Double) -> [Scenario] {
    let logBytes = scaled(50_000_000, scale)
    atexit { PreparedLog.removeAll() }
    return [
        Scenario(
            id: "L1",
            summary: "read a 50 MB action log, entry by entry (ns: the whole log; goal: < 1 s, growth < 50 MB)",
            operations: 1,
            baseline: nil,
            target: nil
        ) {
            let log = PreparedLog.of(bytes: logBytes)
            var count = 0
            var peak = PeakMemory()
            var growth = 0
            let clock = ContinuousClock()
            var elapsed = Duration.zero
            return Repetition(
                run: {
                    peak = PeakMemory()
                    elapsed = clock.measure {
                        let summary = try? ActionLog.forEachEntry(in: log.path, actionTypes: [LedgerEntry.self]) { _ in
                        }
                        count = summary?.entryCount ?? -1
                    }
                    growth = peak.growth
                },
                check: { expect(count, log.lines, "entries read") },
                notes: { logNotes(log, elapsed, growth) }
            )
        },
        Scenario(
            id: "L2",
            summary: "replay a 50 MB action log into 4 stores (ns: the whole log; goal: < 1 s, growth < 50 MB)",
            operations: 1,
            baseline: nil,
            target: nil
        ) {
            let log = PreparedLog.of(bytes: logBytes)
            let (dispatcher, stores) = ledgerDispatcher()
            var report: ActionLog.ReplayReport?
            var peak = PeakMemory()
            var growth = 0
            let clock = ContinuousClock()
            var elapsed = Duration.zero
            return Repetition(
                run: {
                    peak = PeakMemory()
                    elapsed = clock.measure {
                        report = try? ActionLog.replay(
                            contentsOf: log.path,
                            into: dispatcher,
                            actionTypes: [LedgerEntry.self]
                        )
                    }
                    growth = peak.growth
                },
                check: {
                    guard let report, report.succeeded else { return "replay failed: \(String(describing: report))" }
                    return stores.map(\.state) == log.states ? nil : "replayed states differ from the live ones"
                },
                notes: { logNotes(log, elapsed, growth) }
            )
        },
    ]
}

private func logNotes(_ log: PreparedLog, _ elapsed: Duration, _ growth: Int) -> String {
    let size = (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let verdict = seconds < 1 && growth < 50 << 20 ? "" : "; goal MISSED"
    return String(
        format: "%.1f MB, %d lines: %.3f s, peak memory growth %.1f MB%@",
        Double(size) / 1e6,
        log.lines,
        seconds,
        Double(growth) / 1_048_576,
        verdict
    )
}
