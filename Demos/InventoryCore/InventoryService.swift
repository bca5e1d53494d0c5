public import DispatchStore
import Foundation

/// The inventory service: three stores behind one dispatcher, fed one event per input line.
///
/// - `stock`: units available per item and the reservations of open orders; decides every event.
/// - `orders`: each order's status; waits for `stock` and reads its decision.
/// - `audit`: counts of every event and outcome; waits for `orders`.
///
/// Events are dispatched `.serial`, so they apply in input order, one transaction at a time, and
/// the `orders` and `audit` reducers can read the decision `stock` made for the same event. A
/// ``ServiceLogger`` writes to standard error, one line per message, each
/// `inventory: <level>: <sentence>` with the level `error`, `notice` or `info` and, for an event,
/// its input line number; with a log path, an `ActionLogMiddleware` writes every event to a JSON
/// Lines file that `--replay` (``replay(contentsOf:)``) plays back.
public final class InventoryService: @unchecked Sendable {
    // @unchecked: the counters are guarded by `lock`; everything else is immutable or Sendable.

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

    /// The dispatcher the events go through.
    public let dispatcher = Dispatcher()
    /// Units per item and the reservations of open orders.
    public let stock: Store<StockState, InventoryAction>
    /// Each order's status; waits for `stock`.
    public let orders: Store<OrdersState, InventoryAction>
    /// Counts of every event and outcome; waits for `orders`.
    public let audit: Store<AuditState, InventoryAction>
    private let actionLog: ActionLogMiddleware?
    private let diagnostics: @Sendable (String) -> Void
    /// The input line numbers of the events dispatched and not yet finished, oldest first.
    private let lineNumbers: LineNumbers
    /// How much to tell.
    public let verbosity: Verbosity
    private let lock = NSLock()
    // Guarded by `lock`.
    private var stopping = false
    private var linesRead = 0
    private var accepted = 0
    private var badLines = 0

    /// Creates the service.
    ///
    /// - Parameters:
    ///   - logPath: Where to write the action log (emptied first), or `nil` for none.
    ///   - verbosity: How much to tell on standard error.
    ///   - diagnostics: Writes one line for the operator (standard error in the program).
    /// - Throws: `ActionLogError` when the log file cannot be opened.
    public init(
        logPath: String? = nil,
        verbosity: Verbosity = .normal,
        diagnostics: @escaping @Sendable (String) -> Void
    ) throws {
        stock = Store(identifier: "stock", reducer: StockReducer())
        orders = Store(identifier: "orders", reducer: OrdersReducer(stock: stock), waitsFor: ["stock"])
        audit = Store(identifier: "audit", reducer: AuditReducer(stock: stock), waitsFor: ["orders"])
        self.diagnostics = diagnostics
        self.verbosity = verbosity
        let lineNumbers = LineNumbers()
        self.lineNumbers = lineNumbers
        try dispatcher.register(store: stock)
        try dispatcher.register(store: orders)
        try dispatcher.register(store: audit)
        dispatcher.register(
            middleware: ServiceLogger(verbosity: verbosity, stock: stock, lineNumbers: lineNumbers, write: diagnostics)
        )
        if let logPath {
            let failures = Locked(0)
            let log = try ActionLogMiddleware(path: logPath, appending: false) { error in
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
            dispatcher.register(middleware: log)
            actionLog = log
        } else {
            actionLog = nil
        }
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
        if line.allSatisfy(\.isWhitespace) {
            lock.withLock { linesRead += 1 }
            return false
        }
        let action: InventoryAction
        do {
            action = try Event.parse(line)
        } catch {
            reportBadLine(number: number, problem: error.description)
            return false
        }
        return lock.withLock {
            linesRead += 1
            guard !stopping else { return false }
            accepted += 1
            // Under the lock, so that no event is dispatched once finish(reason:) has begun, and so
            // that line numbers are queued in the order of the serial dispatches.
            lineNumbers.append(number)
            dispatcher.dispatch(action, mode: .serial)
            return true
        }
    }

    /// Counts a line that is not an event and reports it as an error naming the line.
    ///
    /// - Parameters:
    ///   - number: The line's number, counting from 1.
    ///   - problem: What is wrong with it, for example `not valid UTF-8`.
    public func reportBadLine(number: Int, problem: String) {
        lock.withLock {
            linesRead += 1
            badLines += 1
        }
        diagnostics("inventory: error: Line \(number) was skipped: \(problem).")
    }

    /// Stops accepting events, lets every accepted one finish, and sums up.
    ///
    /// - Parameter reason: Why the service stops, for the summary (`end of input`, `SIGTERM`, ...).
    /// - Returns: The summary of everything accepted.
    public func finish(reason: String) async -> Summary {
        lock.withLock { stopping = true }
        let report = await dispatcher.shutdown()
        actionLog?.close()
        var summary = summary(reason: reason)
        summary.shutdown = Summary.Shutdown(
            inFlight: report.completed,
            applied: report.completed - report.cancelled,
            cancelled: report.cancelled,
            refused: report.rejected,
            allApplied: report.isIdle && report.cancelled == 0
        )
        return summary
    }

    /// Replays an action log into this (fresh) service and sums up.
    ///
    /// - Parameter path: The log written with `--log`.
    /// - Returns: The summary, and what the replay did.
    /// - Throws: `ActionLogError` naming the file and, for a malformed line, its number.
    public func replay(contentsOf path: String) throws -> (Summary, ActionLog.ReplayReport) {
        let report = try ActionLog.replay(contentsOf: path, into: dispatcher, actionTypes: [InventoryAction.self])
        lock.withLock {
            linesRead = report.replayed
            accepted = report.replayed
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
        let (read, accepted, bad) = lock.withLock { (linesRead, self.accepted, badLines) }
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
                outcomes: audit.outcomes,
                unitsRestocked: audit.unitsRestocked
            ),
            log: actionLog.map { Summary.Log(path: $0.path, written: $0.writtenCount, failures: $0.failureCount) }
        )
    }
}

/// The JSON the service prints on standard output when it stops.
public struct Summary: Codable, Equatable, Sendable {
    /// What became of the input lines.
    public struct Lines: Codable, Equatable, Sendable {
        /// Lines read from the input.
        public var read: Int
        /// Events dispatched (each is in the stores and in the log).
        public var accepted: Int
        /// Lines reported as bad and skipped.
        public var bad: Int

        /// Creates the counts.
        public init(read: Int, accepted: Int, bad: Int) {
            self.read = read
            self.accepted = accepted
            self.bad = bad
        }
    }

    /// How many orders have each status.
    public struct Orders: Codable, Equatable, Sendable {
        /// Orders holding a reservation.
        public var reserved: Int
        /// Orders refused for lack of stock.
        public var refused: Int
        /// Orders cancelled after being reserved.
        public var cancelled: Int
        /// Orders ignored because their id was taken.
        public var duplicates: Int

        /// Creates the counts.
        public init(reserved: Int, refused: Int, cancelled: Int, duplicates: Int) {
            self.reserved = reserved
            self.refused = refused
            self.cancelled = cancelled
            self.duplicates = duplicates
        }
    }

    /// The audit store's counts.
    public struct Audit: Codable, Equatable, Sendable {
        /// Events handled.
        public var events: Int
        /// Events per kind: `restock`, `order`, `cancel`.
        public var kinds: [String: Int]
        /// Events per outcome: `reserved`, `refused`, `duplicate`, ...
        public var outcomes: [String: Int]
        /// Units added by restocks.
        public var unitsRestocked: Int

        /// Creates the counts.
        public init(events: Int, kinds: [String: Int], outcomes: [String: Int], unitsRestocked: Int) {
            self.events = events
            self.kinds = kinds
            self.outcomes = outcomes
            self.unitsRestocked = unitsRestocked
        }
    }

    /// What became of the accepted events when the service stopped.
    ///
    /// The service stops reading, then waits for the events it accepted: the ones still being
    /// applied then are ``inFlight``. Accepted events are never dropped; ``allApplied`` says that
    /// every one was applied in full.
    public struct Shutdown: Codable, Equatable, Sendable {
        /// Accepted events still being applied when the service began to stop; it waited for them.
        public var inFlight: Int
        /// How many of those were then applied in full.
        public var applied: Int
        /// How many of those were cancelled before they were applied (none, unless one failed).
        public var cancelled: Int
        /// Events refused because they came after the stop began (none: the service stops reading
        /// first).
        public var refused: Int
        /// Whether every accepted event was applied: none cancelled, none left running.
        public var allApplied: Bool

        /// Creates the counts.
        public init(inFlight: Int, applied: Int, cancelled: Int, refused: Int, allApplied: Bool) {
            self.inFlight = inFlight
            self.applied = applied
            self.cancelled = cancelled
            self.refused = refused
            self.allApplied = allApplied
        }
    }

    /// The action log, when one was written.
    public struct Log: Codable, Equatable, Sendable {
        /// The log file.
        public var path: String
        /// Lines written.
        public var written: Int
        /// Lines that could not be written.
        public var failures: Int

        /// Creates the counts.
        public init(path: String, written: Int, failures: Int) {
            self.path = path
            self.written = written
            self.failures = failures
        }
    }

    /// Why the service stopped: `end of input`, `SIGTERM`, `SIGINT` or a replay.
    public var reason: String
    /// What became of the input lines.
    public var lines: Lines
    /// Units available per item.
    public var stock: [String: Int]
    /// Units reserved by open orders per item.
    public var reserved: [String: Int]
    /// How many orders have each status.
    public var orders: Orders
    /// The audit store's counts.
    public var audit: Audit
    /// The shutdown report; `nil` for a replay.
    public var shutdown: Shutdown?
    /// The action log; `nil` without `--log`.
    public var log: Log?

    /// Creates a summary.
    public init(
        reason: String,
        lines: Lines,
        stock: [String: Int],
        reserved: [String: Int],
        orders: Orders,
        audit: Audit,
        shutdown: Shutdown? = nil,
        log: Log? = nil
    ) {
        self.reason = reason
        self.lines = lines
        self.stock = stock
        self.reserved = reserved
        self.orders = orders
        self.audit = audit
        self.shutdown = shutdown
        self.log = log
    }

    /// The summary as pretty-printed JSON with sorted, snake_case keys.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        // Encoding plain values cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// Reads a summary printed by the service.
    ///
    /// - Parameter json: The JSON.
    /// - Returns: The summary.
    /// - Throws: `DecodingError` when it is not one.
    public static func decode(_ json: String) throws -> Summary {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(Summary.self, from: Data(json.utf8))
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
    private let stock: Store<StockState, InventoryAction>
    private let lineNumbers: LineNumbers
    private let write: @Sendable (String) -> Void

    init(
        verbosity: InventoryService.Verbosity,
        stock: Store<StockState, InventoryAction>,
        lineNumbers: LineNumbers,
        write: @escaping @Sendable (String) -> Void
    ) {
        self.verbosity = verbosity
        self.stock = stock
        self.lineNumbers = lineNumbers
        self.write = write
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let event = lineNumbers.removeFirst().map { "Line \($0)" } ?? "Replayed event #\(result.transaction.id)"
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
        // Serial dispatch: the stock's last outcome is this transaction's until it returns.
        guard let outcome = stock.state.lastOutcome else { return }
        if verbosity == .verbose {
            write("inventory: info: \(event): \(outcome.text).")
        } else if outcome.isNotable {
            write("inventory: notice: \(event): \(outcome.text).")
        }
    }
}

extension Summary {
    /// What became of the events, in plain words, for the service's last line on standard error;
    /// and whether it is an error (events not applied, or not written to the action log), which
    /// makes the exit status 1.
    public var closing: (sentence: String, isError: Bool) {
        func count(_ value: Int, _ noun: String) -> String {
            "\(value) \(noun)\(value == 1 ? "" : "s")"
        }
        let stopped =
            reason == "end of input"
            ? "Stopped at the end of input"
            : reason.hasPrefix("SIG")
                ? "Stopped on \(reason)"
                : "Stopped (\(reason))"
        let accepted = lines.accepted
        var parts: [String] = []
        var isError = false
        let shutdown = shutdown ?? Shutdown(inFlight: 0, applied: 0, cancelled: 0, refused: 0, allApplied: true)
        if accepted == 0 {
            parts.append("no event was accepted")
        } else if shutdown.allApplied {
            let all =
                accepted == 1 ? "the 1 accepted event was applied" : "all \(accepted) accepted events were applied"
            let waited = shutdown.inFlight == 0 ? "" : ", \(shutdown.inFlight) of them while stopping"
            parts.append(all + waited)
        } else {
            isError = true
            let missing = accepted - audit.events
            parts.append(
                "\(missing) of \(accepted) accepted events were not applied (\(shutdown.cancelled) cancelled while "
                    + "stopping)"
            )
        }
        if let log {
            if log.failures > 0 {
                isError = true
                parts.append("\(count(log.failures, "event")) could not be written to the action log \(log.path)")
            } else if accepted > 0 {
                parts.append("every one was written to the action log \(log.path)")
            }
        }
        if shutdown.refused > 0 {
            parts.append("\(count(shutdown.refused, "event")) arriving after the stop were refused")
        }
        if lines.bad > 0 {
            parts.append("\(count(lines.bad, "bad line")) \(lines.bad == 1 ? "was" : "were") skipped")
        }
        return ("\(stopped): \(parts.joined(separator: "; ")).", isError)
    }
}
