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
/// ``ServiceLogger`` writes to standard error; with a log path, an `ActionLogMiddleware` writes
/// every event to a JSON Lines file that `--replay` (``replay(contentsOf:)``) plays back.
public final class InventoryService: @unchecked Sendable {
    // @unchecked: the counters are guarded by `lock`; everything else is immutable or Sendable.

    /// How much the service tells on standard error.
    public enum Verbosity: Sendable {
        /// Errors only.
        case quiet
        /// Errors and notable outcomes (refused orders, duplicate ids, ignored cancels).
        case normal
        /// Every event.
        case verbose
    }

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
        try dispatcher.register(store: stock)
        try dispatcher.register(store: orders)
        try dispatcher.register(store: audit)
        dispatcher.register(middleware: ServiceLogger(verbosity: verbosity, stock: stock, write: diagnostics))
        if let logPath {
            let log = try ActionLogMiddleware(path: logPath, appending: false) { error in
                diagnostics("inventory: error: \(error)")
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
        lock.withLock { linesRead += 1 }
        if line.allSatisfy(\.isWhitespace) { return false }
        let action: InventoryAction
        do {
            action = try Event.parse(line)
        } catch {
            lock.withLock { badLines += 1 }
            diagnostics("inventory: line \(number): \(error); skipped")
            return false
        }
        return lock.withLock {
            guard !stopping else { return false }
            accepted += 1
            // Under the lock, so that no event is dispatched once finish(reason:) has begun.
            dispatcher.dispatch(action, mode: .serial)
            return true
        }
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
            completed: report.completed,
            cancelled: report.cancelled,
            rejected: report.rejected,
            idle: report.isIdle
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
    }

    /// What the dispatcher's shutdown reported.
    public struct Shutdown: Codable, Equatable, Sendable {
        /// Transactions that ended while the shutdown waited.
        public var completed: Int
        /// How many of them were cancelled.
        public var cancelled: Int
        /// Dispatches rejected after the shutdown began.
        public var rejected: Int
        /// Whether nothing was left in flight.
        public var idle: Bool

        /// Creates the counts.
        public init(completed: Int, cancelled: Int, rejected: Int, idle: Bool) {
            self.completed = completed
            self.cancelled = cancelled
            self.rejected = rejected
            self.idle = idle
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

/// Writes what happens to standard error: errors always, notable outcomes by default, every event
/// when verbose.
final class ServiceLogger: Middleware, Sendable {
    private let verbosity: InventoryService.Verbosity
    private let stock: Store<StockState, InventoryAction>
    private let write: @Sendable (String) -> Void

    init(
        verbosity: InventoryService.Verbosity,
        stock: Store<StockState, InventoryAction>,
        write: @escaping @Sendable (String) -> Void
    ) {
        self.verbosity = verbosity
        self.stock = stock
        self.write = write
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let id = result.transaction.id
        if let error = result.error {
            write("inventory: error: #\(id) \(error)")
            return
        }
        if result.hasFailures || result.wasCancelled {
            write("inventory: error: \(result)")
            return
        }
        guard verbosity != .quiet else { return }
        // Serial dispatch: the stock's last outcome is this transaction's until it returns.
        guard let outcome = stock.state.lastOutcome else { return }
        if verbosity == .verbose {
            write("inventory: info: #\(id) \(outcome.text)")
        } else if outcome.isNotable {
            write("inventory: notice: #\(id) \(outcome.text)")
        }
    }
}
