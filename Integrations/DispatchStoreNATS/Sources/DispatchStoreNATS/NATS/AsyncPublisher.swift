import CNATS
import DispatchStore
import Foundation

/// Publishes JetStream messages without waiting for one acknowledgement before sending the next
/// (nats.c's `js_PublishMsgAsync`), and hands each acknowledgement to the task that awaits it.
///
/// Messages leave in the order `publish` is called (one serial queue sends them). Each has an id,
/// by which its acknowledgement, its error or its timeout (nats.c reports each exactly once) finds
/// the waiting task.
final class AsyncPublisher: @unchecked Sendable {
    // @unchecked: `context` is a nats.c JetStream context, which is thread-safe, destroyed with the
    // connection; the waiting tasks are in `waiting`, behind its lock.

    private typealias Waiter = CheckedContinuation<Result<PublishAck, NATSError>, Never>

    private let handle: NATSHandle
    private let context: CPointer
    private let queue = DispatchQueue(label: "DispatchStoreNATS.publisher")
    private let waiting = Locked<(byID: [String: Waiter], closed: Bool)>(([:], false))
    /// The key under which the C callback finds this publisher.
    private let key: UInt

    /// Publishers by key, for the C callback (which gets the key, never a pointer to an object that
    /// may be gone).
    private static let registry = Locked<[UInt: WeakPublisher]>([:])
    private static let nextKey = Locked<UInt>(1)

    private struct WeakPublisher: Sendable {
        weak var publisher: AsyncPublisher?
    }

    /// Creates a publisher on the connection of `handle`.
    ///
    /// - Parameters:
    ///   - handle: The connection.
    ///   - maximumPending: How many messages may await their acknowledgement at once; a publish
    ///     beyond it waits up to 200 ms on the publisher's queue for one to come back.
    /// - Throws: ``NATSError`` when the connection is closed or nats.c cannot make the context.
    init(handle: NATSHandle, maximumPending: Int = 4_096) throws(NATSError) {
        self.handle = handle
        key = Self.nextKey.withLock { next in
            defer { next += 1 }
            return next
        }
        var options = jsOptions()
        jsOptions_Init(&options)
        options.PublishAsync.MaxPending = Int64(maximumPending)
        options.PublishAsync.AckHandler = publishAcknowledged
        options.PublishAsync.AckHandlerClosure = UnsafeMutableRawPointer(bitPattern: key)
        options.PublishAsync.StallWait = 200
        var context: OpaquePointer?
        let status = try handle.withConnection { connection, _ in
            natsConnection_JetStream(&context, connection, &options)
        }
        guard status == NATS_OK, let context else {
            throw handle.error(status, "opening JetStream for publishing")
        }
        handle.own(context) { jsCtx_Destroy($0) }
        self.context = CPointer(context)
        Self.registry.withLock { $0[key] = WeakPublisher(publisher: self) }
    }

    deinit {
        Self.registry.withLock { _ = $0.removeValue(forKey: key) }
    }

    /// Publishes `data` to `subject` with the id `messageID` and waits for its acknowledgement.
    ///
    /// - Parameters:
    ///   - data: The payload.
    ///   - subject: The subject.
    ///   - messageID: The message's id (`Nats-Msg-Id`): unique among the messages awaiting an
    ///     acknowledgement.
    ///   - timeout: How long to wait for the acknowledgement.
    ///   - what: What is being published, for errors: `message r1.17 to stream ORDERS`.
    ///   - stream: The stream, for errors.
    /// - Returns: The acknowledgement.
    /// - Throws: ``NATSError``: the server's error with its JetStream code, ``NATSError/Code/timeout``
    ///   when no acknowledgement came in time, ``NATSError/Code/connectionClosed``.
    func publish(
        _ data: Data,
        to subject: String,
        messageID: String,
        timeout: Duration,
        what: String,
        stream: String
    ) async throws(NATSError) -> PublishAck {
        let result: Result<PublishAck, NATSError> = await withCheckedContinuation { (waiter: Waiter) in
            let accepted = waiting.withLock { waiting in
                guard !waiting.closed else { return false }
                waiting.byID[messageID] = waiter
                return true
            }
            guard accepted else {
                waiter.resume(returning: .failure(closedError(what, stream: stream)))
                return
            }
            queue.async { [self] in
                let failure = send(
                    data,
                    to: subject,
                    messageID: messageID,
                    timeout: timeout,
                    what: what,
                    stream: stream
                )
                if let failure, let waiter = waiting.withLock({ $0.byID.removeValue(forKey: messageID) }) {
                    waiter.resume(returning: .failure(failure))
                }
            }
        }
        return try result.get()
    }

    /// Fails every publish awaiting its acknowledgement with ``NATSError/Code/connectionClosed``,
    /// and every later one: the connection is closing.
    func failAll() {
        let waiters = waiting.withLock { waiting in
            waiting.closed = true
            defer { waiting.byID = [:] }
            return Array(waiting.byID.values)
        }
        for waiter in waiters {
            waiter.resume(returning: .failure(closedError("publishing", stream: nil)))
        }
    }

    // MARK: Internals

    /// Hands the message to nats.c; returns the error when it did not take it.
    private func send(
        _ data: Data,
        to subject: String,
        messageID: String,
        timeout: Duration,
        what: String,
        stream: String
    ) -> NATSError? {
        do throws(NATSError) {
            return try handle.withConnection(stream: stream) { _, _ throws(NATSError) -> NATSError? in
                var message: OpaquePointer?
                var status = data.withUnsafeBytes { bytes in
                    natsMsg_Create(&message, subject, nil, bytes.baseAddress, Int32(bytes.count))
                }
                guard status == NATS_OK, let created = message else {
                    return handle.error(status, what, stream: stream)
                }
                status = natsMsgHeader_Set(created, "Nats-Msg-Id", messageID)
                var options = jsPubOptions()
                jsPubOptions_Init(&options)
                options.MaxWait = timeout.milliseconds
                if status == NATS_OK { status = js_PublishMsgAsync(context.pointer, &message, &options) }
                // On success nats.c took the message and cleared the pointer: this destroys nothing.
                natsMsg_Destroy(message)
                return status == NATS_OK ? nil : handle.error(status, what, stream: stream)
            }
        } catch {
            return error
        }
    }

    /// Called by nats.c, once per message: with its acknowledgement, or with its error (a timeout
    /// included).
    fileprivate func acknowledged(
        _ message: OpaquePointer?,
        _ ack: UnsafeMutablePointer<jsPubAck>?,
        _ failure: UnsafeMutablePointer<jsPubAckErr>?
    ) {
        guard let message, let id = header(message, "Nats-Msg-Id"),
            let waiter = waiting.withLock({ $0.byID.removeValue(forKey: id) })
        else { return }
        if let ack {
            waiter.resume(returning: .success(PublishAck(ack.pointee)))
            return
        }
        let status = failure?.pointee.Err ?? NATS_ERR
        let code = failure?.pointee.ErrCode ?? jsErrCode(0)
        var error = handle.error(status, jetStreamCode: code, "publishing message \(id)")
        if let text = failure?.pointee.ErrText.map({ String(cString: $0) }), !text.isEmpty {
            let subject = String(cString: natsMsg_GetSubject(message))
            error = NATSError(
                error.code,
                servers: error.servers,
                jetStreamCode: error.jetStreamCode,
                message: "publishing message \(id) to subject \(subject) on \(handle.serverList) failed: \(text)"
                    + (error.jetStreamCode.map { " (JetStream error \($0))" } ?? "")
            )
        }
        waiter.resume(returning: .failure(error))
    }

    private func closedError(_ what: String, stream: String?) -> NATSError {
        NATSError(
            .connectionClosed,
            servers: handle.servers,
            stream: stream,
            message: "\(what) on \(handle.serverList) failed: the connection is closed"
        )
    }

    /// The publisher registered under `key`, if it still exists.
    fileprivate static func publisher(for key: UInt) -> AsyncPublisher? {
        registry.withLock { $0[key]?.publisher }
    }
}

/// The acknowledgement handler nats.c calls for each message published asynchronously.
private let publishAcknowledged: jsPubAckHandler = { _, message, ack, failure, closure in
    AsyncPublisher.publisher(for: UInt(bitPattern: closure))?.acknowledged(message, ack, failure)
    natsMsg_Destroy(message)
}
