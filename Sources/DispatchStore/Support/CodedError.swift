/// What ``DispatchError``, ``ActionLogError`` and ``JournalError`` share: a code to match on and a
/// sentence for a person, which is the description.
protocol CodedError: CustomStringConvertible, CustomDebugStringConvertible {
    /// The type of ``code``.
    associatedtype Code: ErrorCode

    /// The kind of problem.
    var code: Code { get }
    /// A sentence naming what is involved and what is wrong.
    var message: String { get }
}

extension CodedError {
    /// The message: a sentence naming what is involved.
    ///
    /// It does not start with the code: match on `code` in code.
    public var description: String {
        message
    }

    /// The type, the code and the message, for logs read by developers:
    /// `ActionLogError(malformedLine): Line 7 of actions.jsonl is not a valid log entry: ...`.
    public var debugDescription: String {
        "\(Self.self)(\(code)): \(message)"
    }
}
