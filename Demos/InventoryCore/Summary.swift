import Foundation

/// The JSON the service prints on standard output when it stops.
public struct Summary: Codable, Equatable, Sendable {
    /// What became of the input lines.
    public struct Lines: Codable, Equatable, Sendable {
        /// Lines read from the input.
        public var read: Int
        /// Events dispatched (each is in the stores and in the log); with `--data`, also the events
        /// recovered from the data directory, so that it counts the whole history.
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
        /// Lines that could not be written: events, and the checkpoint of the stores' checksums that
        /// closing the log writes.
        public var failures: Int

        /// Creates the counts.
        public init(path: String, written: Int, failures: Int) {
            self.path = path
            self.written = written
            self.failures = failures
        }
    }

    /// The data directory (`--data`): the journal that keeps the stores' states across runs.
    public struct DataDirectory: Codable, Equatable, Sendable {
        /// The directory.
        public var path: String
        /// Events recovered from it when the service started: its history until then.
        public var recovered: Int
        /// Events in its history now: the recovered ones and those recorded since.
        public var history: Int
        /// The first write that failed, as a sentence naming the file; `nil` when none did.
        public var failure: String?

        /// Creates the counts.
        public init(path: String, recovered: Int, history: Int, failure: String? = nil) {
            self.path = path
            self.recovered = recovered
            self.history = history
            self.failure = failure
        }
    }

    /// The stream the stores are replicated through (`--nats`).
    public struct Stream: Codable, Equatable, Sendable {
        /// The stream's name.
        public var name: String
        /// The sequence number of the last message this replica applied: the stream's end when it
        /// stopped.
        public var last: UInt64
        /// How many messages it applied when it started, to catch up (after the snapshot it loaded).
        public var caughtUp: Int
        /// How many of its accepted events were not applied: their append failed, or was not
        /// applied here in time.
        public var failed: Int
        /// How many servers keep the stream.
        public var replicas: Int
        /// How many messages of the stream, as far as the replica knew, it had not applied when it
        /// stopped: 0 once it caught up.
        public var behind: UInt64

        /// Creates the counts.
        public init(name: String, last: UInt64, caughtUp: Int, failed: Int, replicas: Int, behind: UInt64) {
            self.name = name
            self.last = last
            self.caughtUp = caughtUp
            self.failed = failed
            self.replicas = replicas
            self.behind = behind
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
    /// The data directory; `nil` without `--data`.
    public var data: DataDirectory?
    /// The stream; `nil` without `--nats`.
    public var stream: Stream?

    /// Creates a summary.
    public init(
        reason: String,
        lines: Lines,
        stock: [String: Int],
        reserved: [String: Int],
        orders: Orders,
        audit: Audit,
        shutdown: Shutdown? = nil,
        log: Log? = nil,
        data: DataDirectory? = nil,
        stream: Stream? = nil
    ) {
        self.reason = reason
        self.lines = lines
        self.stock = stock
        self.reserved = reserved
        self.orders = orders
        self.audit = audit
        self.shutdown = shutdown
        self.log = log
        self.data = data
        self.stream = stream
    }

    /// The summary as pretty-printed JSON with sorted, snake_case keys, except the `stream` object's
    /// (`name`, `last`, `caughtUp`, `failed`, `replicas`, `behind`), spelled as the replicated inventory documents them.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .custom { path in
            let key = path[path.count - 1]
            if path.count > 1 && path[path.count - 2].stringValue == "stream" { return key }
            return SummaryKey(snakeCase: key.stringValue)
        }
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
        // With --data, lines.accepted counts the recovered history too; the sentence is about this run.
        let recovered = data?.recovered ?? 0
        let accepted = lines.accepted - recovered
        var parts: [String] = []
        var isError = false
        let shutdown = shutdown ?? Shutdown(inFlight: 0, applied: 0, cancelled: 0, refused: 0, allApplied: true)
        if accepted == 0 {
            parts.append(recovered == 0 ? "no event was accepted" : "no new event was accepted")
        } else if let stream, stream.failed > 0 {
            isError = true
            parts.append(
                "\(stream.failed) of \(accepted) accepted events were not applied (their append to stream "
                    + "\(stream.name) failed or was not applied here in time)"
            )
        } else if shutdown.allApplied {
            let all =
                accepted == 1 ? "the 1 accepted event was applied" : "all \(accepted) accepted events were applied"
            let waited = shutdown.inFlight == 0 ? "" : ", \(shutdown.inFlight) of them while stopping"
            parts.append(all + waited)
        } else {
            isError = true
            let missing = lines.accepted - audit.events
            parts.append(
                "\(missing) of \(accepted) accepted events were not applied (\(shutdown.cancelled) cancelled while "
                    + "stopping)"
            )
        }
        if let log {
            if log.failures > 0 {
                isError = true
                parts.append("\(count(log.failures, "line")) could not be written to the action log \(log.path)")
            } else if accepted > 0 {
                parts.append("every one was written to the action log \(log.path)")
            }
        }
        if let data {
            if let failure = data.failure {
                isError = true
                parts.append("the data directory \(data.path) stopped recording: \(failure.dropLast())")
            } else if data.history == 0 {
                parts.append("the data directory \(data.path) holds no event yet")
            } else {
                parts.append(
                    "the data directory \(data.path) holds all \(count(data.history, "event")) of its history"
                        + (recovered == 0 ? "" : ", \(recovered) of them recovered at the start")
                )
            }
        }
        if let stream {
            parts.append(
                "this replica applied stream \(stream.name) up to message \(stream.last)"
                    + (stream.caughtUp == 0
                        ? "" : ", \(count(stream.caughtUp, "message")) of them caught up at the start")
            )
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

/// A property's name in snake case (`inFlight` as `in_flight`), as `convertToSnakeCase` writes it.
private struct SummaryKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }

    init(snakeCase name: String) {
        var result = ""
        for character in name {
            if character.isUppercase {
                result += "_" + character.lowercased()
            } else {
                result.append(character)
            }
        }
        stringValue = result
    }

    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
