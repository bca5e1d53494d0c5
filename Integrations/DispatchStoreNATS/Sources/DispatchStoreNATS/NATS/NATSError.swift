@_spi(DispatchStoreNATS) import DispatchStoreJournal

/// A failure talking to NATS, naming the servers, the stream or bucket involved and, for a JetStream
/// error, its code.
///
/// ```swift
/// do {
///     _ = try await NATSConnection.connect(to: ["nats://127.0.0.1:4222"])
/// } catch {
///     print(error)  // No NATS server is reachable at nats://127.0.0.1:4222: ...
/// }
/// ```
///
/// The description is the message alone, a sentence for a person; code that reacts to the error
/// reads ``code`` (and ``jetStreamCode``), and `String(reflecting: error)` shows the code too.
package struct NATSError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String

        /// None of the servers could be reached.
        package static let noServer = Code(name: "noServer")
        /// The server did not answer in time (or no server was connected to answer).
        package static let timeout = Code(name: "timeout")
        /// The connection was closed.
        package static let connectionClosed = Code(name: "connectionClosed")
        /// Nothing listens on the subject: JetStream is not enabled, or the stream has no leader yet.
        package static let noResponders = Code(name: "noResponders")
        /// The stream does not exist.
        package static let streamNotFound = Code(name: "streamNotFound")
        /// The message, or the key of a bucket, does not exist.
        package static let notFound = Code(name: "notFound")
        /// A publish expected another last sequence (JetStream error 10071), or a key-value update
        /// another revision.
        package static let wrongLastSequence = Code(name: "wrongLastSequence")
        /// The payload is larger than the server's `max_payload`.
        package static let payloadTooLarge = Code(name: "payloadTooLarge")
        /// Another JetStream API error: see ``NATSError/jetStreamCode``.
        package static let jetStream = Code(name: "jetStream")
        /// A value passed to the client is invalid (a subject, a stream name).
        package static let invalidArgument = Code(name: "invalidArgument")
        /// The servers refused the client (an authorization violation: no credentials, wrong ones)
        /// or one of its calls (a permissions violation); the message has the server's words.
        package static let notPermitted = Code(name: "notPermitted")
        /// The TLS handshake failed (a certificate the client does not trust, or none where the server
        /// wants one), or one side wants TLS and the other does not.
        package static let tls = Code(name: "tls")
        /// Any other failure of the client; the message has the client's text.
        package static let other = Code(name: "other")

        /// The code's name, for example `noServer`.
        package var description: String { name }
    }

    /// The kind of failure.
    package let code: Code
    /// The servers the connection was given.
    package let servers: [String]
    /// The stream or key-value bucket involved, if one is.
    package let stream: String?
    /// The JetStream error code the server returned (for example 10071), if it returned one.
    package let jetStreamCode: Int?
    /// A sentence naming the servers, the stream and what went wrong.
    package let message: String

    /// Creates an error; the client creates these, tests may too.
    ///
    /// - Parameters:
    ///   - code: The kind of failure.
    ///   - servers: The servers the connection was given.
    ///   - stream: The stream or bucket involved, if any.
    ///   - jetStreamCode: The JetStream error code, if any.
    ///   - message: A sentence naming what went wrong; a lowercase first letter is capitalized and a
    ///     final period added where it has none.
    package init(_ code: Code, servers: [String], stream: String? = nil, jetStreamCode: Int? = nil, message: String) {
        self.code = code
        self.servers = servers
        self.stream = stream
        self.jetStreamCode = jetStreamCode
        self.message = sentence(message)
    }

    /// The message: a sentence naming the servers, the stream and what went wrong.
    package var description: String {
        message
    }

    /// The code and the message, for logs read by developers: `NATSError(timeout): ...`.
    package var debugDescription: String {
        "NATSError(\(code)): \(message)"
    }
}

extension NATSError {
    /// JetStream's error code for "no suitable peers for placement": the cluster has too few servers
    /// for the replicas asked, or one of them is still starting.
    static let noSuitablePeers = 10005

    /// Whether the failure may pass by itself: no answer in time, no responder yet, or a cluster
    /// still placing its servers or electing a leader (JetStream errors 10005, 10008, 10009).
    var isTransient: Bool {
        switch code {
        case .timeout, .noResponders: true
        case .jetStream: [10005, 10008, 10009].contains(jetStreamCode ?? 0)
        default: false
        }
    }
}
