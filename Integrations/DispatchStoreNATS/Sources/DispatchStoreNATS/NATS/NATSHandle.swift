import CNATS
import DispatchStore
import Foundation

/// A nats.c connection and the JetStream context for its API calls, with their lifetime guarded:
/// a call holds a use of the handle while it runs, and ``close()`` destroys the C objects only once
/// no call holds one, so that no call ever reaches freed memory.
package final class NATSHandle: @unchecked Sendable {
    // @unchecked: `connection`, `jetStream` and the objects in `owned` are nats.c objects, which are
    // thread-safe; `uses`, `closed` and `owned` are only touched while holding `condition`, and the C
    // objects are destroyed only once `uses` is 0 and `closed` is set.

    /// The servers the connection was given, for messages.
    let servers: [String]
    let connection: OpaquePointer
    /// The context for JetStream API calls (streams, messages, key-value buckets).
    let jetStream: OpaquePointer
    private let condition = NSCondition()
    private var uses = 0
    private var closed = false
    /// Other nats.c objects made from this connection, destroyed with it (before it).
    private var owned: [(OpaquePointer, @Sendable (OpaquePointer) -> Void)] = []

    /// The key under which the connection's error handler finds this handle.
    private let key: UInt
    /// What the servers refused lately: the subject and the server's words, when.
    private var refusals: [(subject: String, text: String, time: ContinuousClock.Instant)] = []

    /// Handles by key, for the connection's error handler.
    static let registry = Registry<NATSHandle>()

    init(servers: [String], connection: OpaquePointer, jetStream: OpaquePointer, key: UInt) {
        self.servers = servers
        self.connection = connection
        self.jetStream = jetStream
        self.key = key
        Self.registry.add(self, for: key)
    }

    /// Remembers a refusal the server reported on its own (a permissions violation), so that the
    /// call it made fail reports it rather than a timeout.
    func recordRefusal(_ text: String) {
        // `Permissions Violation for Publish to "dispatchstore.ORDERS"`: the subject is quoted.
        let parts = text.split(separator: "\"", omittingEmptySubsequences: false)
        let subject = parts.count >= 2 ? String(parts[1]) : ""
        condition.lock()
        refusals.append((subject, text, .now))
        if refusals.count > 16 { refusals.removeFirst(refusals.count - 16) }
        condition.unlock()
    }

    /// The server's words for a refusal of a publish to `subject` (any JetStream API subject when
    /// `subject` is `nil`) within the last `seconds`, if there was one.
    func refusal(of subject: String?, within seconds: Duration = .seconds(10)) -> String? {
        condition.lock()
        defer { condition.unlock() }
        let since = ContinuousClock.now - seconds
        return refusals.last { refusal in
            refusal.time >= since && (subject.map { refusal.subject == $0 } ?? refusal.subject.hasPrefix("$JS."))
        }?.text
    }

    /// The servers, as messages name them: `nats://a:4222, nats://b:4222`.
    var serverList: String {
        servers.joined(separator: ", ")
    }

    /// Runs `body` with the connection, holding a use of it.
    ///
    /// - Throws: ``NATSError/Code/connectionClosed`` once ``close()`` began; what `body` throws.
    func withConnection<Result>(
        stream: String? = nil,
        _ body: (OpaquePointer, OpaquePointer) throws(NATSError) -> Result
    ) throws(NATSError) -> Result {
        try beginUse(stream: stream)
        defer { endUse() }
        return try body(connection, jetStream)
    }

    /// Takes a use of the connection, for an object that calls it often (a subscription's reader):
    /// ``close()`` waits until ``endUse()`` gives it back.
    ///
    /// - Throws: ``NATSError/Code/connectionClosed`` once ``close()`` began.
    func beginUse(stream: String? = nil) throws(NATSError) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else {
            throw NATSError(
                .connectionClosed,
                servers: servers,
                stream: stream,
                message: "the connection to \(serverList) is closed"
            )
        }
        uses += 1
    }

    /// Gives back a use taken with ``beginUse(stream:)``.
    func endUse() {
        condition.lock()
        uses -= 1
        if uses == 0 { condition.broadcast() }
        condition.unlock()
    }

    /// Keeps `object` until the connection closes, then destroys it with `destroy` before the
    /// connection.
    func own(_ object: OpaquePointer, destroy: @escaping @Sendable (OpaquePointer) -> Void) {
        condition.lock()
        owned.append((object, destroy))
        condition.unlock()
    }

    /// Whether ``close()`` began.
    var isClosed: Bool {
        condition.lock()
        defer { condition.unlock() }
        return closed
    }

    /// The connection's state and the server it is connected to, for messages: `connected to
    /// nats://127.0.0.1:4222`, `reconnecting`.
    var stateDescription: String {
        (try? withConnection { connection, _ in
            switch natsConnection_Status(connection) {
            case NATS_CONN_STATUS_CONNECTED:
                var buffer = [CChar](repeating: 0, count: 256)
                natsConnection_GetConnectedUrl(connection, &buffer, buffer.count)
                let url = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
                return "connected to \(String(decoding: url, as: UTF8.self))"
            case NATS_CONN_STATUS_RECONNECTING: return "reconnecting"
            case NATS_CONN_STATUS_CONNECTING: return "connecting"
            case NATS_CONN_STATUS_CLOSED: return "closed"
            default: return "disconnected"
            }
        }) ?? "closed"
    }

    /// Closes the connection and destroys the C objects.
    ///
    /// Waits until no call holds a use (each is bounded by its timeout), then destroys the owned
    /// objects, the JetStream context and the connection. Blocks; call it off the cooperative pool.
    /// Calling it again does nothing.
    func close() {
        condition.lock()
        guard !closed else {
            condition.unlock()
            return
        }
        closed = true
        condition.unlock()
        // Closing first makes blocking calls (a subscription's next message) return at once.
        natsConnection_Close(connection)
        condition.lock()
        while uses > 0 {
            condition.wait()
        }
        let objects = owned
        owned = []
        condition.unlock()
        for (object, destroy) in objects.reversed() {
            destroy(object)
        }
        jsCtx_Destroy(jetStream)
        natsConnection_Destroy(connection)
        Self.registry.remove(key)
    }

    /// The error for a nats.c call that returned `status`, naming the servers and the stream, with the
    /// client's own text for the failure (read on the calling thread, where nats.c keeps it).
    ///
    /// - Parameters:
    ///   - status: What the call returned.
    ///   - jetStreamCode: The JetStream error code it set, or 0.
    ///   - what: What was being done, as a phrase: `publishing to stream ORDERS`.
    ///   - stream: The stream or bucket involved.
    ///   - subject: The subject of a publish, whose refusal by the server (a permissions violation)
    ///     makes the error ``NATSError/Code/notPermitted``; `nil` for a JetStream API call.
    /// - Returns: The error.
    func error(
        _ status: natsStatus,
        jetStreamCode: jsErrCode = jsErrCode(0),
        _ what: String,
        stream: String? = nil,
        subject: String? = nil
    )
        -> NATSError
    {
        let error = NATSHandle.error(status, jetStreamCode: jetStreamCode, what, servers: servers, stream: stream)
        // The server reports a refusal on its own; the call itself only saw no answer.
        guard [.timeout, .noResponders, .other].contains(error.code), let refusal = refusal(of: subject) else {
            return error
        }
        return NATSError(
            .notPermitted,
            servers: servers,
            stream: stream,
            message: "\(what) on \(serverList) was refused by the server: \(refusal) (the user's permissions do not "
                + "allow it)"
        )
    }

    /// The error for a nats.c call that returned `status`; see the instance method.
    ///
    /// - Returns: The error, with the code that fits the status and the JetStream code.
    static func error(
        _ status: natsStatus,
        jetStreamCode: jsErrCode = jsErrCode(0),
        _ what: String,
        servers: [String],
        stream: String? = nil
    ) -> NATSError {
        let code: NATSError.Code
        let jetStream = Int(jetStreamCode.rawValue)
        switch (status, jetStream) {
        case (_, 10071): code = .wrongLastSequence
        case (_, 10059): code = .streamNotFound
        case (_, 10037), (NATS_NOT_FOUND, _): code = .notFound
        case (NATS_CONNECTION_AUTH_FAILED, _), (NATS_NOT_PERMITTED, _): code = .notPermitted
        case (NATS_SSL_ERROR, _), (NATS_SECURE_CONNECTION_WANTED, _), (NATS_SECURE_CONNECTION_REQUIRED, _): code = .tls
        case (NATS_NO_SERVER, _): code = .noServer
        case (NATS_TIMEOUT, _): code = .timeout
        case (NATS_CONNECTION_CLOSED, _): code = .connectionClosed
        case (NATS_NO_RESPONDERS, _): code = .noResponders
        case (NATS_MAX_PAYLOAD, _): code = .payloadTooLarge
        case (NATS_INVALID_ARG, _), (NATS_INVALID_SUBJECT, _): code = .invalidArgument
        case (_, let value) where value != 0: code = .jetStream
        default: code = .other
        }
        var text = natsStatus_GetText(status).map { String(cString: $0) } ?? "status \(status.rawValue)"
        if let last = nats_GetLastError(nil).map({ String(cString: $0) }), !last.isEmpty, last != text {
            // nats.c starts its text with where it was set: "(conn.c:2088): No server available...".
            if last.hasPrefix("("), let end = last.range(of: "): ") {
                text = String(last[end.upperBound...])
            } else {
                text = last
            }
        }
        if code == .other && text.contains("wrong last sequence") {
            return NATSError(
                .wrongLastSequence,
                servers: servers,
                stream: stream,
                message: "\(what) on \(servers.joined(separator: ", ")) failed: \(text)"
            )
        }
        var message = "\(what) on \(servers.joined(separator: ", ")) failed: \(text)"
        if jetStream != 0 { message += " (JetStream error \(jetStream))" }
        if code == .noServer {
            message = "no NATS server is reachable at \(servers.joined(separator: ", ")): \(text)"
        }
        return NATSError(
            code,
            servers: servers,
            stream: stream,
            jetStreamCode: jetStream == 0 ? nil : jetStream,
            message: message
        )
    }
}

/// Runs blocking nats.c calls on threads of their own, never on the cooperative pool, and hands
/// the result back to the awaiting task.
enum BlockingCalls {
    /// Runs `body` on a new thread (or on `queue`, a serial queue that owns its thread) and returns
    /// what it returns.
    ///
    /// A thread per call: these are control calls (a stream's state, a key-value entry), few and
    /// each bounded by its timeout, and a thread of their own cannot be starved by other blocked
    /// calls the way a width-limited queue can.
    static func run<Result: Sendable>(
        on queue: DispatchQueue? = nil,
        _ body: @escaping @Sendable () throws(NATSError) -> Result
    ) async throws(NATSError) -> Result {
        // The outcome goes through a lock as well as the continuation: ThreadSanitizer does not see
        // a continuation resumed on a thread of our own as ordering what that thread did (the
        // objects `body` made) before the task goes on, and reported races on their fields.
        let outcome = Locked<Swift.Result<Result, NATSError>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let work: @Sendable () -> Void = {
                let result = Swift.Result { () throws(NATSError) in try body() }
                outcome.withLock { $0 = result }
                continuation.resume()
            }
            if let queue {
                queue.async(execute: work)
            } else {
                Thread.detachNewThread(work)
            }
        }
        guard let result = outcome.withLock({ $0 }) else {
            preconditionFailure("DispatchStoreNATS: a blocking call resumed without an outcome")
        }
        return try result.get()
    }
}

/// Calls `body` with C strings for `strings`, valid during the call.
func withCStrings<Result>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) throws -> Result) rethrows -> Result {
    let copies = strings.map { strdup($0) }
    defer {
        for copy in copies { free(copy) }
    }
    return try body(copies.map { UnsafePointer($0) })
}

extension Duration {
    /// The duration in whole milliseconds, at least 1 when it is positive.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let value = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        return value == 0 && (seconds > 0 || attoseconds > 0) ? 1 : value
    }
}

/// The error handler nats.c calls for what a server reports on its own (a permissions violation, a
/// slow consumer) and for asynchronous errors.
let connectionReportedError: natsErrHandler = { connection, _, status, closure in
    guard status == NATS_NOT_PERMITTED, let connection else { return }
    var text: UnsafePointer<CChar>?
    _ = natsConnection_GetLastError(connection, &text)
    guard let text, let handle = NATSHandle.registry.object(for: UInt(bitPattern: closure)) else { return }
    handle.recordRefusal(String(cString: text))
}
