@_spi(DispatchStoreNATS) import DispatchStoreJournal

/// A problem starting, feeding or running a ``Replication``, naming the stream, the servers and,
/// where one is involved, the store, the message's sequence number and the NATS error behind it.
///
/// The description is the message alone, a sentence for a person; code that reacts to the error
/// reads ``code``, and `String(reflecting: error)` shows the code too.
public struct ReplicationError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of problem.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String

        /// The stores or the configuration cannot be replicated: a store that is not registered,
        /// not `Codable`, already changed, or an action type without a stable name.
        public static let invalidSetup = Code(name: "invalidSetup")
        /// No server is reachable, or the stream or bucket cannot be used: see ``ReplicationError/natsError``.
        public static let unavailable = Code(name: "unavailable")
        /// An action was not acknowledged by the stream, or not applied here, within its timeout.
        ///
        /// When it was sent, it may still be stored and applied later by every replica: its message id
        /// makes a retry within the stream's duplicate window safe.
        public static let timedOut = Code(name: "timedOut")
        /// The action's type is handled by no replicated store.
        public static let notReplicated = Code(name: "notReplicated")
        /// A change reached a replicated store without going through the stream, and was refused.
        public static let changeOutsideStream = Code(name: "changeOutsideStream")
        /// The stream no longer holds messages this replica needs (its limits discarded them) and no
        /// snapshot covers them: the replica stopped before the gap.
        public static let gap = Code(name: "gap")
        /// A message of the stream cannot be applied (not a record, an unknown action type): the
        /// replica stopped before it rather than skip it.
        public static let unreadableMessage = Code(name: "unreadableMessage")
        /// A snapshot could not be written, or one that was read is damaged or of a newer format.
        public static let snapshot = Code(name: "snapshot")
        /// The replica stopped after an earlier problem (``Replication/failure``), or was closed.
        public static let stopped = Code(name: "stopped")
        /// The servers refused the replica (no credentials, wrong ones) or one of its calls (the
        /// user may not append to the stream, or use the JetStream API it needs): see the message,
        /// which has the server's words.
        public static let notPermitted = Code(name: "notPermitted")
        /// The servers gave this replica another history of the stream than the one they acknowledged
        /// its appends in: their copies of the stream differ.
        ///
        /// The replica stopped rather than hold a state the other replicas do not. A known failure of nats-server 2.9 under `kill -9` of a stream's
        /// leader; run a newer server.
        public static let diverged = Code(name: "diverged")
        /// The waiting task was cancelled.
        public static let cancelled = Code(name: "cancelled")

        /// The code's name, for example `timedOut`.
        public var description: String { name }
    }

    /// The kind of problem.
    public let code: Code
    /// The stream.
    public let stream: String
    /// The store involved, if one is.
    public let storeIdentifier: String?
    /// The sequence number of the message involved, if one is.
    public let sequence: UInt64?
    /// The NATS failure behind it, if there is one: its servers and JetStream error code.
    package let natsError: NATSError?
    /// A sentence naming the stream, the store or message and what went wrong.
    public let message: String

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: The kind of problem.
    ///   - stream: The stream.
    ///   - storeIdentifier: The store involved, if any.
    ///   - sequence: The sequence number of the message involved, if any.
    ///   - natsError: The NATS failure behind it, if any.
    ///   - message: A sentence naming what went wrong; a lowercase first letter is capitalized and a
    ///     final period added where it has none.
    package init(
        _ code: Code,
        stream: String,
        storeIdentifier: String? = nil,
        sequence: UInt64? = nil,
        natsError: NATSError? = nil,
        message: String
    ) {
        self.code = code
        self.stream = stream
        self.storeIdentifier = storeIdentifier
        self.sequence = sequence
        self.natsError = natsError
        self.message = sentence(message)
    }

    /// The message: a sentence naming the stream, the store or message and what went wrong.
    public var description: String {
        message
    }

    /// The code and the message, for logs read by developers: `ReplicationError(gap): ...`.
    public var debugDescription: String {
        "ReplicationError(\(code)): \(message)"
    }
}
