public import DispatchStore
import DispatchStoreInspector
public import DispatchStoreJournal
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The inventory service: three stores behind one dispatcher, fed one event per input line.
///
/// - `stock`: units available per item and the reservations of open orders; decides every event.
/// - `orders`: each order's status; waits for `stock` and asks it whether the order holds a
///   reservation.
/// - `audit`: counts of every event by kind; depends on the action alone.
///
/// Events are dispatched `.serial`, so they apply in input order, one transaction at a time: the
/// `orders` reducer reads the stock's state for the same event, and the log derives each event's
/// outcome from the event and the stock's state before it (``StockState/outcome(of:)``). A
/// ``ServiceLogger`` writes to standard error, one line per message, each
/// `inventory: <level>: <sentence>` with the level `error`, `notice` or `info` and, for an event,
/// its input line number; with a log path, an `ActionLogMiddleware` writes every event to a JSON
/// Lines file that `--replay` (``replay(contentsOf:)``) plays back; with a data directory, a
/// `Journal` keeps the stores' states there and recovers them when the service starts again.
public final class InventoryService: Sendable {

    /// How much the service tells on standard error.
    public enum Verbosity: Sendable {
        /// Errors only: bad lines, events not applied, writes that failed.
        case quiet
        /// Errors, notable outcomes (refused orders, duplicate ids, ignored cancels) and what the
        /// service is doing (starting, stopping).
        case normal
        /// Everything, and every event's outcome.
        case verbose
    }

    /// How many write failures of the action log are reported one by one; later ones are counted.
    public static let reportedWriteFailures = 5

    /// The stores' identifiers, named once for every place that needs them (they are also the
    /// stores' names in the action log, the journal and the stream's snapshots).
    enum StoreIdentifier {
        /// The stock's store, which decides every event.
        static let stock = "stock"
        /// The orders' store, which waits for the stock's.
        static let orders = "orders"
        /// The audit's store.
        static let audit = "audit"
    }

    /// The dispatcher the events go through.
    public let dispatcher = Dispatcher()
    /// Units per item and the reservations of open orders.
    public let stock: Store<StockState, InventoryAction>
    /// Each order's status; waits for `stock`.
    public let orders: Store<OrdersState, InventoryAction>
    /// Counts of every event by kind.
    public let audit: Store<AuditState, InventoryAction>
    private let actionLog: ActionLogMiddleware?
    /// The journal in the data directory, with `--data`.
    public let journal: Journal?
    /// The inspector's page of the run, with `--report`.
    public let report: InventoryReport?
    private let diagnostics: @Sendable (String) -> Void
    /// The input line numbers of the events dispatched and not yet finished, oldest first.
    private let lineNumbers: LineNumbers
    /// The stock's decision for the event being applied, for the log.
    private let decisions: StockDecisions
    /// How much to tell.
    public let verbosity: Verbosity
    /// The input's counts, and whether the service stopped accepting events.
    private struct Counts {
        var stopping = false
        var linesRead = 0
        var accepted = 0
        var badLines = 0
    }
    private let counts = Locked(Counts())

    /// A service that cannot start: a sentence naming the file and what to do.
    public struct StartError: Error, CustomStringConvertible {
        /// The sentence.
        public let description: String
    }

    /// Creates the service.
    ///
    /// - Parameters:
    ///   - logPath: Where to write the action log, or `nil` for none. An existing log is appended
    ///     to (a line cut short by a crash is cut away first and reported) when the service
    ///     continues its history from `dataDirectory`; a log holding events is refused otherwise.
    ///   - dataDirectory: The journal's directory, or `nil` for none: the stores are recovered
    ///     from it, and every event is recorded in it.
    ///   - snapshotEvery: How many events between two snapshots in the data directory.
    ///   - verbosity: How much to tell on standard error.
    ///   - logsEvents: Whether a middleware logs each event's outcome, naming its input line (`false`
    ///     when the caller logs them itself, as the replicated service does for the events of every
    ///     replica).
    ///   - report: The inspector's page of the run (`--report`), or `nil`: its inspector is registered
    ///     first, so that the page shows the recovery too, and ``finish(reason:)`` writes it.
    ///   - diagnostics: Writes one line for the operator (standard error in the program).
    /// - Throws: ``StartError``, `JournalError` or `ActionLogError`, each naming the file, when the
    ///   data directory or the log cannot be used.
    public init(
        logPath: String? = nil,
        dataDirectory: String? = nil,
        snapshotEvery: Int = 1_000,
        verbosity: Verbosity = .normal,
        logsEvents: Bool = true,
        report: InventoryReport? = nil,
        diagnostics: @escaping @Sendable (String) -> Void
    ) throws {
        stock = Store(identifier: StoreIdentifier.stock, reducer: StockReducer())
        orders = Store(
            identifier: StoreIdentifier.orders,
            reducer: OrdersReducer(stock: stock),
            waitsFor: [StoreIdentifier.stock]
        )
        audit = Store(identifier: StoreIdentifier.audit, reducer: AuditReducer())
        self.diagnostics = diagnostics
        self.verbosity = verbosity
        let lineNumbers = LineNumbers()
        self.lineNumbers = lineNumbers
        try dispatcher.register(store: stock)
        try dispatcher.register(store: orders)
        try dispatcher.register(store: audit)
        self.report = report
        // The inspector, then the journal, so that the recovery's dispatches reach no other middleware.
        if let report { dispatcher.register(middleware: report.inspector) }
        if let dataDirectory {
            let failed = Locked(false)
            let openJournal = { [dispatcher] () throws(JournalError) -> Journal in
                try Journal(directory: dataDirectory, dispatcher: dispatcher, snapshotEvery: snapshotEvery) { error in
                    // The journal stops at its first failure; later ones repeat it.
                    let first = failed.withLock { alreadyFailed in
                        defer { alreadyFailed = true }
                        return !alreadyFailed
                    }
                    guard first else { return }
                    diagnostics("inventory: error: \(error)")
                }
            }
            let journal = try report?.inspector.recordRecovery(openJournal) ?? openJournal()
            self.journal = journal
        } else {
            journal = nil
        }
        let recovered = journal?.recovery.recordCount ?? 0
        let decisions = StockDecisions(stock: stock)
        self.decisions = decisions
        dispatcher.register(middleware: decisions)
        if logsEvents {
            dispatcher.register(
                middleware: ServiceLogger(
                    verbosity: verbosity,
                    decisions: decisions,
                    lineNumbers: lineNumbers,
                    write: diagnostics
                )
            )
        }
        if let logPath {
            // Opened first: the library reports a path that cannot be a log, takes the log's writer
            // lock, and cuts away a torn tail, so that what is left is the earlier runs' events.
            let log = try Self.openLog(logPath, diagnostics: diagnostics)
            var status = stat()
            if recovered == 0 && stat(logPath, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG
                && status.st_size > 0
            {
                log.close()
                throw StartError(
                    description: "The action log \(logPath) already holds events of an earlier run, and the stores "
                        + "start empty: appending would mix two runs that no replay can tell apart. Pass --data DIR "
                        + "to carry the state from run to run, or choose another log."
                )
            }
            actionLog = log
            dispatcher.register(middleware: log)
        } else {
            actionLog = nil
        }
        counts.withLock { $0.accepted = recovered }
    }

    /// Opens the action log to append; errors go to `diagnostics`, the first few one by one.
    private static func openLog(
        _ path: String,
        diagnostics: @escaping @Sendable (String) -> Void
    ) throws -> ActionLogMiddleware {
        let failures = Locked(0)
        return try ActionLogMiddleware(path: path, appending: true) { error in
            if error.code == .tornTail {
                diagnostics("inventory: notice: \(error)")
                return
            }
            let count = failures.withLock {
                $0 += 1
                return $0
            }
            if count <= Self.reportedWriteFailures {
                diagnostics("inventory: error: \(error)")
            }
            if count == Self.reportedWriteFailures {
                diagnostics("inventory: error: Later write failures of the action log are counted, not shown.")
            }
        }
    }

    /// Whether a write to the data directory failed: the journal then records nothing more, so the
    /// service should stop reading.
    public var hasFailed: Bool {
        journal?.firstFailure != nil
    }

    /// Takes one input line: parses it and dispatches its event, or reports it as bad.
    ///
    /// - Parameters:
    ///   - line: The line, without its newline.
    ///   - number: Its line number, counting from 1, for the report of a bad line.
    /// - Returns: Whether the event was accepted: dispatched, and so part of the summary and the log.
    ///   `false` for a bad or blank line, and for every line once ``finish(reason:)`` began.
    @discardableResult
    public func accept(line: String, number: Int) -> Bool {
        guard let action = parse(line: line, number: number) else { return false }
        return counts.withLock { counts in
            counts.linesRead += 1
            guard !counts.stopping else { return false }
            counts.accepted += 1
            // Under the lock, so that no event is dispatched once finish(reason:) has begun, and so
            // that line numbers are queued in the order of the serial dispatches.
            lineNumbers.append(number)
            dispatcher.dispatch(action, mode: .serial)
            return true
        }
    }

    /// Takes one input line for a caller that submits its event itself (the replicated service):
    /// parses and counts it, or reports it as bad.
    ///
    /// - Parameters:
    ///   - line: The line, without its newline.
    ///   - number: Its line number, counting from 1, for the report of a bad line.
    /// - Returns: The event's action, counted as accepted; `nil` for a bad or blank line, and for
    ///   every line once ``stopAccepting()`` or ``finish(reason:)`` was called.
    public func admit(line: String, number: Int) -> InventoryAction? {
        guard let action = parse(line: line, number: number) else { return nil }
        return counts.withLock { counts in
            counts.linesRead += 1
            guard !counts.stopping else { return nil }
            counts.accepted += 1
            return action
        }
    }

    /// Stops accepting events: ``accept(line:number:)`` and ``admit(line:number:)`` refuse every
    /// line from now on.
    public func stopAccepting() {
        counts.withLock { $0.stopping = true }
    }

    /// The action of a line, or `nil` for a blank line (counted) and a bad one (counted and reported).
    private func parse(line: String, number: Int) -> InventoryAction? {
        if line.allSatisfy(\.isWhitespace) {
            counts.withLock { $0.linesRead += 1 }
            return nil
        }
        do {
            return try Event.parse(line)
        } catch {
            reportBadLine(number: number, problem: error.description)
            return nil
        }
    }

    /// Writes what became of one event on standard error, as the service does for the events it
    /// dispatches itself: an error when it was not applied in full, its outcome when notable (a
    /// refused order, a duplicate id, an ignored cancel), or always when verbose.
    ///
    /// Call it right after the event was applied, before the next one: it reads the outcome derived
    /// for it as it reached the stock.
    ///
    /// - Parameters:
    ///   - result: How the event's transaction ended.
    ///   - event: The event's name in the message: `Line 7`, `Stream message 12`.
    public func logOutcome(of result: DispatchResult, event: String) {
        ServiceLogger.log(result, event: event, verbosity: verbosity, decisions: decisions, write: diagnostics)
    }

    /// Counts a line that is not an event and reports it as an error naming the line.
    ///
    /// - Parameters:
    ///   - number: The line's number, counting from 1.
    ///   - problem: What is wrong with it, for example `not valid UTF-8`.
    public func reportBadLine(number: Int, problem: String) {
        counts.withLock { counts in
            counts.linesRead += 1
            counts.badLines += 1
        }
        diagnostics("inventory: error: Line \(number) was skipped: \(problem).")
    }

    /// Stops accepting events, lets every accepted one finish, and sums up.
    ///
    /// - Parameter reason: Why the service stops, for the summary (`end of input`, `SIGTERM`, ...).
    /// - Returns: The summary of everything accepted.
    public func finish(reason: String) async -> Summary {
        counts.withLock { $0.stopping = true }
        let report = await dispatcher.shutdown()
        actionLog?.close()
        // Closing writes a last snapshot; a failure is in firstFailure, which the summary reports.
        try? journal?.close()
        self.report?.write()
        var summary = summary(reason: reason)
        summary.shutdown = Summary.Shutdown(
            inFlight: report.finished,
            applied: report.finished - report.cancelled,
            cancelled: report.cancelled,
            refused: report.rejected,
            allApplied: report.isIdle && report.cancelled == 0
        )
        return summary
    }

    /// Replays an action log into this (fresh) service and sums up.
    ///
    /// With a report (`--report`), the replay goes on past a line it cannot read (the page shows it,
    /// and the replay does not succeed), and the page is written at the end.
    ///
    /// - Parameter path: The log written with `--log`.
    /// - Returns: The summary, and what the replay did.
    /// - Throws: `ActionLogError` naming the file and, for a malformed line without a report, its number.
    public func replay(contentsOf path: String) throws -> (Summary, ActionLog.ReplayReport) {
        let report: ActionLog.ReplayReport
        if let inspector = self.report?.inspector {
            report = try inspector.replay(contentsOf: path, into: dispatcher, actionTypes: [InventoryAction.self])
            self.report?.write()
        } else {
            report = try ActionLog.replay(contentsOf: path, into: dispatcher, actionTypes: [InventoryAction.self])
        }
        counts.withLock { counts in
            counts.linesRead = report.replayed
            counts.accepted = report.replayed
        }
        return (summary(reason: "replay of \(path)"), report)
    }

    /// The summary of the stores' states now.
    ///
    /// - Parameter reason: Why the summary is made.
    /// - Returns: The summary, without the shutdown report.
    public func summary(reason: String) -> Summary {
        let stock = stock.state
        let orders = orders.state
        let audit = audit.state
        let counts = orders.counts
        let (read, accepted, bad) = self.counts.withLock { ($0.linesRead, $0.accepted, $0.badLines) }
        return Summary(
            reason: reason,
            lines: Summary.Lines(read: read, accepted: accepted, bad: bad),
            stock: stock.available,
            reserved: stock.reserved,
            orders: Summary.Orders(
                reserved: counts[.reserved, default: 0],
                refused: counts[.refused, default: 0],
                cancelled: counts[.cancelled, default: 0],
                duplicates: orders.duplicates
            ),
            audit: Summary.Audit(
                events: audit.events,
                kinds: audit.kinds,
                outcomes: orders.outcomeCounts(kinds: audit.kinds),
                unitsRestocked: audit.unitsRestocked
            ),
            log: actionLog.map { Summary.Log(path: $0.path, written: $0.writtenCount, failures: $0.failureCount) },
            data: journal.map { journal in
                Summary.DataDirectory(
                    path: journal.directory,
                    recovered: journal.recovery.recordCount,
                    history: journal.recordCount,
                    failure: journal.firstFailure?.description
                )
            }
        )
    }
}

/// The input line numbers of the events dispatched and not finished yet, oldest first.
///
/// Events are dispatched `.serial`, so they finish in the order they were dispatched: the logger
/// takes the oldest number for each transaction that finishes. A replay dispatches none, so its
/// transactions have no line number.
final class LineNumbers: Sendable {
    private let queue = Locked((numbers: [Int](), first: 0))

    /// Adds the number of the event about to be dispatched.
    func append(_ number: Int) {
        queue.withLock { $0.numbers.append(number) }
    }

    /// Takes the oldest number, or `nil` when none is queued.
    func removeFirst() -> Int? {
        queue.withLock { queue in
            guard queue.first < queue.numbers.count else { return nil }
            let number = queue.numbers[queue.first]
            queue.first += 1
            if queue.first >= 1_024 && queue.first * 2 >= queue.numbers.count {
                queue.numbers.removeFirst(queue.first)
                queue.first = 0
            }
            return number
        }
    }
}

/// Writes what happens to standard error: errors always, notable outcomes by default, every event
/// when verbose, each naming the event's input line.
final class ServiceLogger: Middleware, Sendable {
    private let verbosity: InventoryService.Verbosity
    private let decisions: StockDecisions
    private let lineNumbers: LineNumbers
    private let write: @Sendable (String) -> Void

    init(
        verbosity: InventoryService.Verbosity,
        decisions: StockDecisions,
        lineNumbers: LineNumbers,
        write: @escaping @Sendable (String) -> Void
    ) {
        self.verbosity = verbosity
        self.decisions = decisions
        self.lineNumbers = lineNumbers
        self.write = write
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let event = lineNumbers.removeFirst().map { "Line \($0)" } ?? "Replayed event #\(result.transaction.id)"
        Self.log(result, event: event, verbosity: verbosity, decisions: decisions, write: write)
    }

    /// Writes what became of the event `event` (`Line 7`), whose transaction ended with `result`.
    static func log(
        _ result: DispatchResult,
        event: String,
        verbosity: InventoryService.Verbosity,
        decisions: StockDecisions,
        write: @Sendable (String) -> Void
    ) {
        if let error = result.error {
            write("inventory: error: \(event) was not applied: \(error)")
            return
        }
        if result.hasFailures || result.wasCancelled {
            let outcomes = result.outcomes.map(\.description).joined(separator: ", ")
            write("inventory: error: \(event) was not applied in full: \(outcomes).")
            return
        }
        guard verbosity != .quiet else { return }
        guard let outcome = decisions.outcome(of: result.transaction) else { return }
        if verbosity == .verbose {
            write("inventory: info: \(event): \(outcome.text).")
        } else if outcome.isNotable {
            write("inventory: notice: \(event): \(outcome.text).")
        }
    }
}
