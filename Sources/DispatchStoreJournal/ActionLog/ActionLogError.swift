public import DispatchStore

/// A problem writing or reading an action log, naming the file and, for a line, its number.
///
/// The description is the message alone, a sentence for a person; code that reacts to the error
/// reads ``code`` (and ``path``, ``line`` and ``storeIdentifier``), and `String(reflecting: error)`
/// shows the code too.
public struct ActionLogError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of problem.
    public struct Code: Hashable, Sendable, CustomStringConvertible, ErrorCode {
        package let name: String

        /// The log file cannot be opened or written.
        public static let unwritableFile = Code(name: "unwritableFile")
        /// The log file cannot be read.
        public static let unreadableFile = Code(name: "unreadableFile")
        /// Another writer has the log open: one writer per log.
        ///
        /// The other writer is another process, or another ``ActionLogMiddleware`` in this one; the
        /// message names it.
        public static let locked = Code(name: "locked")
        /// A line is not a log entry (bad JSON, a missing key, a payload that does not decode).
        public static let malformedLine = Code(name: "malformedLine")
        /// A line's action type is not among the types given to the reader.
        public static let unknownActionType = Code(name: "unknownActionType")
        /// An action's `Encodable` conformance threw.
        public static let unencodableAction = Code(name: "unencodableAction")
        /// An action type has no name another process reads as the same type (it is `private`,
        /// `fileprivate` or local); declare it elsewhere or conform it to ``StablyNamed``.
        public static let unstableTypeName = Code(name: "unstableTypeName")
        /// The file ended with a line cut short by a crash (bytes after the last newline, or a last line that is not
        /// JSON).
        ///
        /// Readers skip it; opening the file to append cuts it away.
        public static let tornTail = Code(name: "tornTail")
        /// Replay: a store's next sequence number is missing from the log, so the store stopped
        /// before it.
        public static let sequenceGap = Code(name: "sequenceGap")
        /// Replay: two lines give one store the same sequence number.
        public static let duplicateSequenceNumber = Code(name: "duplicateSequenceNumber")
        /// Replay: a store's state differs from the checksum the log recorded for it.
        public static let checksumMismatch = Code(name: "checksumMismatch")
        /// Replay: a line names a store that the dispatcher does not have, or that handles
        /// another action type.
        public static let unknownStore = Code(name: "unknownStore")
        /// Replay: a store did not apply a logged action as the log says (another sequence number,
        /// or not at all).
        public static let outcomeMismatch = Code(name: "outcomeMismatch")
    }

    /// The kind of problem.
    public let code: Code
    /// The file, the line, the store and the message.
    let problem: FileProblem

    /// The log file.
    public var path: String { problem.path }
    /// The line involved, counting from 1, for problems with one line.
    public var line: Int? { problem.line }
    /// The offset in the file of the first byte involved, when one is.
    public var byteOffset: Int? { problem.byteOffset }
    /// The store involved, for replay problems.
    public var storeIdentifier: String? { problem.storeIdentifier }
    /// A sentence naming the file, the line and what is wrong.
    public var message: String { problem.message }

    /// Creates an error; the library creates these, tests may too.
    ///
    /// - Parameters:
    ///   - code: The kind of problem.
    ///   - path: The log file.
    ///   - line: The line involved, if any.
    ///   - byteOffset: The offset of the first byte involved, if any.
    ///   - storeIdentifier: The store involved, if any.
    ///   - message: A sentence naming what is wrong; a lowercase first letter is capitalized and a
    ///     final period added where it has none.
    public init(
        _ code: Code,
        path: String,
        line: Int? = nil,
        byteOffset: Int? = nil,
        storeIdentifier: String? = nil,
        message: String
    ) {
        self.code = code
        problem = FileProblem(
            path: path,
            line: line,
            byteOffset: byteOffset,
            storeIdentifier: storeIdentifier,
            message: message
        )
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
        ActionLogError(.unwritableFile, path: path, message: "cannot write the action log \(path): \(reason)")
    }

    static func locked(_ path: String, lockPath: String, holder: String) -> ActionLogError {
        ActionLogError(
            .locked,
            path: path,
            message: "cannot write the action log \(path): it is open for writing already, in \(holder), which "
                + "holds the lock \(lockPath); a log takes one writer at a time: close the other first, or choose "
                + "another path"
        )
    }

    static func unreadable(_ path: String, reason: String) -> ActionLogError {
        ActionLogError(.unreadableFile, path: path, message: "cannot read the action log \(path): \(reason)")
    }

    static func malformed(line: Int, path: String, reason: String) -> ActionLogError {
        ActionLogError(
            .malformedLine,
            path: path,
            line: line,
            message: "line \(line) of \(path) is not a valid log entry: \(reason)"
        )
    }

    static func unknownType(_ type: String, line: Int, path: String, known: [String]) -> ActionLogError {
        ActionLogError(
            .unknownActionType,
            path: path,
            line: line,
            message: "line \(line) of \(path) holds an action of type \(type), which is not among the types given "
                + "(\(known.joined(separator: ", "))); pass it in actionTypes"
        )
    }

    static func unencodable(transaction: Transaction, path: String, reason: String) -> ActionLogError {
        ActionLogError(
            .unencodableAction,
            path: path,
            message: "transaction #\(transaction.id) was not written to \(path): its action \(transaction.action) "
                + "failed to encode: \(reason)"
        )
    }

    static func unstableName(of type: Any.Type, path: String, reason: String) -> ActionLogError {
        ActionLogError(
            .unstableTypeName,
            path: path,
            message:
                "the action type \(type) cannot be written to \(path): its name, \(ActionTypeNames.name(of: type)), "
                + "\(reason), so no other process could read it back; declare the type at file scope without "
                + "private or fileprivate, or conform it to StablyNamed with a name of its own "
                + "(static let stableName = \"\(type)\")"
        )
    }

    static func torn(_ tail: ActionLog.TornTail, path: String, cut: Bool) -> ActionLogError {
        ActionLogError(
            .tornTail,
            path: path,
            line: tail.line,
            byteOffset: tail.byteOffset,
            message: "line \(tail.line) of \(path) (\(tail.byteCount) byte\(tail.byteCount == 1 ? "" : "s") from byte "
                + "\(tail.byteOffset)) was cut short by a crash while it was written; "
                + (cut
                    ? "it was cut away before appending" + (tail.savedPath.map { " and saved in \($0)" } ?? "")
                    : "it was skipped" + (tail.savedPath.map { "; its bytes were saved in \($0)" } ?? ""))
        )
    }

    // MARK: Replay

    static func gap(_ store: String, missing: UInt64, laterLine: Int, atEnd: Bool, path: String) -> ActionLogError {
        ActionLogError(
            .sequenceGap,
            path: path,
            line: laterLine,
            storeIdentifier: store,
            message:
                "store '\(store)' stopped after sequence number \(missing - 1): no line of \(path) holds its action "
                + "number \(missing)"
                + (atEnd
                    ? ", and the log ends first; the later lines for it (from line \(laterLine)) were not replayed"
                    : " though line \(laterLine) holds a later one; the lines after the gap were not replayed for it")
        )
    }

    static func duplicate(_ store: String, _ number: UInt64, line: Int, path: String) -> ActionLogError {
        ActionLogError(
            .duplicateSequenceNumber,
            path: path,
            line: line,
            storeIdentifier: store,
            message: "line \(line) of \(path) gives store '\(store)' sequence number \(number), which an earlier line "
                + "gave it already; the store stopped there"
        )
    }

    static func notApplied(
        _ store: String,
        _ number: UInt64,
        as actual: UInt64?,
        line: Int,
        path: String
    ) -> ActionLogError {
        ActionLogError(
            .outcomeMismatch,
            path: path,
            line: line,
            storeIdentifier: store,
            message: "store '\(store)' "
                + (actual.map { "applied the action of line \(line) of \(path) as number \($0)" }
                    ?? "did not apply the action of line \(line) of \(path)")
                + ", which the log numbers \(number) (is anything else dispatching to it?); the store stopped there"
        )
    }

    static func unknownStore(_ store: String, line: Int, path: String, action: any ActionType) -> ActionLogError {
        ActionLogError(
            .unknownStore,
            path: path,
            line: line,
            storeIdentifier: store,
            message: "line \(line) of \(path) names store '\(store)', which the dispatcher does not have or which does "
                + "not handle \(type(of: action)); its actions in the log were skipped"
        )
    }

    static func checksumMismatch(_ store: String, _ number: UInt64, line: Int, path: String) -> ActionLogError {
        ActionLogError(
            .checksumMismatch,
            path: path,
            line: line,
            storeIdentifier: store,
            message:
                "store '\(store)' after its action number \(number) differs from the state line \(line) of \(path) "
                + "records: the reducers are not deterministic, read other stores' states, or the state was changed "
                + "outside an action (updateState); replay continued"
        )
    }
}
