/// A problem writing or reading an action log, naming the file and, for a line, its number.
///
/// The description is the message alone, a sentence for a person; code that reacts to the error
/// reads ``code`` (and ``path`` and ``line``), and `String(reflecting: error)` shows the code too.
public struct ActionLogError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of problem.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The log file cannot be opened or written.
        public static let unwritableFile = Code("unwritableFile")
        /// The log file cannot be read.
        public static let unreadableFile = Code("unreadableFile")
        /// A line is not a log entry (bad JSON, a missing key, a payload that does not decode).
        public static let malformedLine = Code("malformedLine")
        /// A line's action type is not among the types given to the reader.
        public static let unknownActionType = Code("unknownActionType")
        /// An action's `Encodable` conformance threw.
        public static let unencodableAction = Code("unencodableAction")

        /// The code's name, for example `malformedLine`.
        public var description: String {
            name
        }
    }

    /// The kind of problem.
    public let code: Code
    /// The log file.
    public let path: String
    /// The line involved, counting from 1, for problems with one line.
    public let line: Int?
    /// A sentence naming the file, the line and what is wrong.
    public let message: String

    /// Creates an error; the library creates these, tests may too.
    ///
    /// - Parameters:
    ///   - code: The kind of problem.
    ///   - path: The log file.
    ///   - line: The line involved, if any.
    ///   - message: A sentence naming what is wrong.
    public init(_ code: Code, path: String, line: Int? = nil, message: String) {
        self.code = code
        self.path = path
        self.line = line
        self.message = message
    }

    /// The message: a sentence naming the file and, for a line, its number.
    ///
    /// For example `Line 7 of actions.jsonl is not a valid log entry: the key "type" is missing.` It
    /// does not start with the code: match on ``code`` in code.
    public var description: String {
        message
    }

    /// The code and the message, for logs read by developers: `ActionLogError(malformedLine): Line 7 ...`.
    public var debugDescription: String {
        "ActionLogError(\(code)): \(message)"
    }

    static func unwritable(_ path: String, reason: String) -> ActionLogError {
        ActionLogError(.unwritableFile, path: path, message: "Cannot write the action log \(path): \(clause(reason)).")
    }

    static func unreadable(_ path: String, reason: String) -> ActionLogError {
        ActionLogError(.unreadableFile, path: path, message: "Cannot read the action log \(path): \(clause(reason)).")
    }

    static func malformed(line: Int, path: String, reason: String) -> ActionLogError {
        ActionLogError(
            .malformedLine,
            path: path,
            line: line,
            message: "Line \(line) of \(path) is not a valid log entry: \(clause(reason))."
        )
    }

    static func unknownType(_ type: String, line: Int, path: String, known: [String]) -> ActionLogError {
        ActionLogError(
            .unknownActionType,
            path: path,
            line: line,
            message: "Line \(line) of \(path) holds an action of type \(type), which is not among the types given "
                + "(\(known.joined(separator: ", "))); pass it in actionTypes."
        )
    }

    static func unencodable(transaction: Transaction, path: String, reason: String) -> ActionLogError {
        ActionLogError(
            .unencodableAction,
            path: path,
            message: "Transaction #\(transaction.id) was not written to \(path): its action \(transaction.action) "
                + "failed to encode: \(clause(reason))."
        )
    }

    /// `reason` without a final period, to be followed by one.
    private static func clause(_ reason: String) -> Substring {
        var reason = reason[...]
        while reason.last == "." || reason.last == " " { reason = reason.dropLast() }
        return reason
    }
}
