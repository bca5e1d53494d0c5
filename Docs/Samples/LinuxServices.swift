// The samples of Docs/LinuxServices.md.

import DispatchStore
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

enum LinuxServices {
    // sample: action
    enum LedgerAction: ActionType, Codable, Equatable {
        case deposit(account: String, cents: Int)
        case withdraw(account: String, cents: Int)
    }

    struct Balances: StateType, Codable, Equatable {
        var cents: [String: Int] = [:]
    }

    final class BalancesReducer: Reducer<Balances, LedgerAction> {
        override func reduce(_ action: LedgerAction, into state: inout Balances) {
            switch action {
            case .deposit(let account, let cents): state.cents[account, default: 0] += cents
            case .withdraw(let account, let cents): state.cents[account, default: 0] -= cents
            }
        }
    }
    // end-sample

    // sample: stderr-logger
    /// One line on standard error per transaction that did not succeed.
    final class ErrorLogger: Middleware {
        func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

        func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

        func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
            guard !result.succeeded else { return }
            FileHandle.standardError.write(Data("ledger: \(result)\n".utf8))
        }
    }
    // end-sample

    static func makeDispatcher() throws -> (Dispatcher, Store<Balances, LedgerAction>) {
        let dispatcher = Dispatcher()
        let balances = Store<Balances, LedgerAction>(identifier: "balances", reducer: BalancesReducer())
        try dispatcher.register(store: balances)
        return (dispatcher, balances)
    }

    /// The service's entry point: never called by the tests.
    static func main() async throws {
        let (dispatcher, _) = try makeDispatcher()
        dispatcher.register(middleware: ErrorLogger())
        // sample: signals
        // Let dispatch sources take SIGTERM and SIGINT instead of the default handler.
        var sources: [any DispatchSourceSignal] = []  // kept: a released source stops
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                Task {
                    let report = await dispatcher.shutdown(timeout: .seconds(10))
                    FileHandle.standardError.write(Data("ledger: \(report)\n".utf8))
                    exit(report.isIdle ? 0 : 1)
                }
            }
            source.resume()
            sources.append(source)
        }
        // end-sample
        while let line = readLine() {
            let parts = line.split(separator: " ")
            guard parts.count == 3, let cents = Int(parts[2]) else { continue }
            let account = String(parts[1])
            let action: LedgerAction =
                parts[0] == "deposit"
                ? .deposit(account: account, cents: cents) : .withdraw(account: account, cents: cents)
            dispatcher.dispatch(action, mode: .serial)
        }
        await dispatcher.shutdown()
        withExtendedLifetime(sources) {}
    }

    static func logAndReplay(directory: String) throws -> (Balances, ActionLog.ReplayReport) {
        let (dispatcher, _) = try makeDispatcher()
        let path = directory + "/actions.jsonl"
        // sample: action-log
        let log = try ActionLogMiddleware(path: path, syncsToDisk: true) { error in  // fsync each line
            // A torn tail cut away on opening, a line that could not be written: say so, and stop.
            FileHandle.standardError.write(Data("ledger: \(error)\n".utf8))
        }
        dispatcher.register(middleware: log)
        // end-sample
        dispatcher.dispatch(LedgerAction.deposit(account: "alice", cents: 500), mode: .serial)
        dispatcher.dispatch(LedgerAction.withdraw(account: "alice", cents: 120), mode: .serial)
        dispatcher.dispatch(LedgerAction.deposit(account: "bob", cents: 75), mode: .serial)
        dispatcher.waitUntilIdle()
        log.close()  // writes a checkpoint: every store's checksum

        // sample: replay
        let fresh = Dispatcher()
        let balances = Store<Balances, LedgerAction>(identifier: "balances", reducer: BalancesReducer())
        try fresh.register(store: balances)
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [LedgerAction.self])
        print(report)  // replayed 3 transactions; 1 checksum matched
        print(report.succeeded, balances.state.cents)  // true ["alice": 380, "bob": 75]
        // end-sample
        return (balances.state, report)
    }

    static func drain() async throws -> (ShutdownReport, DispatchResult) {
        let (dispatcher, _) = try makeDispatcher()
        for _ in 0..<100 {
            dispatcher.dispatch(LedgerAction.deposit(account: "alice", cents: 1), mode: .serial)
        }
        // sample: shutdown
        let report = await dispatcher.shutdown()  // lets the queued deposits finish
        print(report.isIdle, report.cancelled)  // true 0

        let late = await dispatcher.perform(LedgerAction.deposit(account: "bob", cents: 1))
        print(late.error?.code == .shutDown)  // true: no store saw it
        // end-sample
        return (report, late)
    }
}

/// The shape of swift-service-lifecycle's `Service`, so that the conformance line compiles here
/// as it does in a program using that package.
protocol Service: Sendable {
    func run() async throws
}

// sample: service-conformance
extension Dispatcher: Service {}  // with ServiceLifecycle: extension Dispatcher: @retroactive Service {}
extension Journal: Service {}
// end-sample

extension LinuxServices {
    /// Opens the ledger's journal in `directory`, deposits `cents` for alice, and returns the
    /// balances and what recovery said.
    static func journaled(directory: String, cents: Int) throws -> (Balances, Journal.Recovery) {
        // sample: journal
        let dispatcher = Dispatcher()
        let balances = Store<Balances, LedgerAction>(identifier: "balances", reducer: BalancesReducer())
        try dispatcher.register(store: balances)
        let journal = try Journal(directory: directory, dispatcher: dispatcher, snapshotEvery: 1_000)
        print(journal.recovery)  // recovered 2 records in 0.001 s: 2 records from the start
        for problem in journal.recovery.problems {  // a torn record, a damaged snapshot, ...
            FileHandle.standardError.write(Data("ledger: recovery: \(problem)\n".utf8))
        }
        // end-sample
        dispatcher.dispatch(LedgerAction.deposit(account: "alice", cents: cents), mode: .sync)
        return (balances.state, journal.recovery)
    }

    // sample: migration
    /// Version 2 of the wallet keeps cents; version 1 kept whole dollars.
    struct Wallet: VersionedState, Equatable {
        static let stateVersion = 2
        var cents: [String: Int] = [:]
    }

    struct WalletV1: Decodable {
        var dollars: [String: Int]
    }

    static let walletMigration = StateMigration(Wallet.self) { version, data in
        let old = try JSONDecoder().decode(WalletV1.self, from: data)  // version 1
        return Wallet(cents: old.dollars.mapValues { $0 * 100 })
    }
    // Journal(directory: path, dispatcher: dispatcher, migrations: [walletMigration])
    // end-sample

    /// Version 1 of the wallet, as the previous program declared it (not shown in the guide).
    struct WalletVersion1: StateType, Codable {
        var dollars: [String: Int] = [:]
    }

    enum WalletAction: ActionType, Codable {
        case add(String, Int)
    }

    final class WalletVersion1Reducer: Reducer<WalletVersion1, WalletAction> {
        override func reduce(_ action: WalletAction, into state: inout WalletVersion1) {
            guard case .add(let account, let amount) = action else { return }
            state.dollars[account, default: 0] += amount
        }
    }

    final class WalletReducer: Reducer<Wallet, WalletAction> {
        override func reduce(_ action: WalletAction, into state: inout Wallet) {
            guard case .add(let account, let amount) = action else { return }
            state.cents[account, default: 0] += amount * 100
        }
    }

    /// Writes a version 1 snapshot with 3 dollars, then opens it with version 2 and the migration.
    static func migrate(directory: String) throws -> Wallet {
        let old = Dispatcher()
        try old.register(
            store: Store<WalletVersion1, WalletAction>(identifier: "wallet", reducer: WalletVersion1Reducer())
        )
        let journal = try Journal(directory: directory, dispatcher: old)
        old.dispatch(WalletAction.add("alice", 3), mode: .sync)
        try journal.close()

        let current = Dispatcher()
        let wallet = Store<Wallet, WalletAction>(identifier: "wallet", reducer: WalletReducer())
        try current.register(store: wallet)
        _ = try Journal(directory: directory, dispatcher: current, migrations: [walletMigration])
        return wallet.state
    }

    static func service(directory: String) async throws -> Int {
        let dispatcher = Dispatcher()
        let balances = Store<Balances, LedgerAction>(identifier: "balances", reducer: BalancesReducer())
        try dispatcher.register(store: balances)
        let journal = try Journal(directory: directory, dispatcher: dispatcher)
        // sample: service
        let service = Task { try await dispatcher.run() }
        for _ in 0..<100 {
            dispatcher.dispatch(LedgerAction.deposit(account: "alice", cents: 1), mode: .serial)
        }
        // On SIGTERM:
        service.cancel()
        try await service.value  // every accepted deposit is applied and journaled
        try journal.close()  // a last snapshot: the next start replays nothing
        // end-sample
        return balances.state.cents["alice"] ?? 0
    }

    // sample: shipping
    /// Where shipping stopped: a records file and the offset after its last shipped line.
    struct ShippedPosition: Codable, Equatable {
        var file = ""
        var offset = 0
    }

    /// Publishes every complete record the journal in `directory` wrote after `position`, in order,
    /// and returns the new position (save it once the broker acknowledged).
    static func ship(
        _ directory: String,
        from position: ShippedPosition,
        publish: (Data) throws -> Void
    ) throws -> ShippedPosition {
        var position = position
        let files = try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasPrefix("records-") && $0 >= position.file }
            .sorted()
        for file in files {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file))
            var start = file == position.file ? position.offset : 0
            // Only lines that end with a newline: a torn tail is never shipped.
            while start < data.count, let end = data[start...].firstIndex(of: UInt8(ascii: "\n")) {
                try publish(data[start..<end])
                start = end + 1
            }
            position = ShippedPosition(file: file, offset: start)
        }
        return position
    }
    // end-sample
}

@Suite("Docs: Linux services")
struct LinuxServicesSamples {
    @Test("the action log replays into the same balances")
    func logAndReplay() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (balances, report) = try LinuxServices.logAndReplay(directory: directory.path)
        #expect(balances.cents == ["alice": 380, "bob": 75])
        #expect(report.replayed == 3)
    }

    @Test("shutdown drains, then rejects")
    func drain() async throws {
        let (report, late) = try await LinuxServices.drain()
        #expect(report.isIdle)
        #expect(report.completed <= 100)
        #expect(late.error?.code == .shutDown)
    }

    @Test("the journal recovers the balances after a restart")
    func journal() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try LinuxServices.journaled(directory: directory.path, cents: 500)
        _ = try LinuxServices.journaled(directory: directory.path, cents: 20)
        let (balances, recovery) = try LinuxServices.journaled(directory: directory.path, cents: 0)
        #expect(balances.cents == ["alice": 520])
        #expect(recovery.isClean)
        #expect(recovery.recordCount == 2)
    }

    @Test("a migration turns version 1's dollars into cents")
    func migration() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wallet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try LinuxServices.migrate(directory: directory.path) == LinuxServices.Wallet(cents: ["alice": 300]))
    }

    @Test("run() drains the deposits when its task is cancelled; the journal keeps them")
    func service() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(try await LinuxServices.service(directory: directory.path) == 100)
        let (balances, recovery) = try LinuxServices.journaled(directory: directory.path, cents: 0)
        #expect(balances.cents == ["alice": 100])
        #expect(recovery.replayedRecordCount == 0 && recovery.snapshotRecordCount == 100)
    }

    @Test("shipping publishes each complete record once, and only what is new the next time")
    func shipping() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try LinuxServices.journaled(directory: directory.path, cents: 5)
        var published: [Data] = []
        let first = try LinuxServices.ship(directory.path, from: .init()) { published.append($0) }
        #expect(published.count == 1)
        _ = try LinuxServices.journaled(directory: directory.path, cents: 7)
        let second = try LinuxServices.ship(directory.path, from: first) { published.append($0) }
        #expect(published.count == 2)
        #expect(String(decoding: published[1], as: UTF8.self).contains(#""cents":7"#))
        #expect(try LinuxServices.ship(directory.path, from: second) { published.append($0) } == second)
        #expect(published.count == 2)
    }
}
