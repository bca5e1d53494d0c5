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

    struct Balances: StateType {
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
        let log = try ActionLogMiddleware(path: path, syncsToDisk: true)  // fsync each line
        dispatcher.register(middleware: log)
        // end-sample
        dispatcher.dispatch(LedgerAction.deposit(account: "alice", cents: 500), mode: .serial)
        dispatcher.dispatch(LedgerAction.withdraw(account: "alice", cents: 120), mode: .serial)
        dispatcher.dispatch(LedgerAction.deposit(account: "bob", cents: 75), mode: .serial)
        dispatcher.waitUntilIdle()

        // sample: replay
        let fresh = Dispatcher()
        let balances = Store<Balances, LedgerAction>(identifier: "balances", reducer: BalancesReducer())
        try fresh.register(store: balances)
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [LedgerAction.self])
        print(report)  // replayed 3 transactions
        print(balances.state.cents)  // ["alice": 380, "bob": 75]
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
}
