import CNATS
import Foundation

/// Publishes JetStream messages without waiting for one acknowledgement before sending the next
/// (nats.c's `js_PublishMsgAsync`), and hands each acknowledgement, or error, to a callback by the
/// message's id.
///
/// Messages leave in the order ``send(_:to:messageID:timeout:stream:)`` is called, handed to
/// nats.c by one caller at a time. A send that finds nobody sending hands its message (and those
/// queued behind it meanwhile) to nats.c itself, which only buffers it: no thread hop. When many
/// acknowledgements are outstanding, where nats.c may make a send wait, or when others keep sending,
/// a serial queue of its own takes over, never a thread of the cooperative pool. nats.c reports each
/// message exactly once: with its acknowledgement, its error, or a timeout.
final class AsyncPublisher: @unchecked Sendable {
    // @unchecked: `context` is a nats.c JetStream context, which is thread-safe, destroyed with the
    // connection (after every call holding a use of it); the messages waiting to be sent, and who
    // sends them, are in `outbox`, behind its lock.

    /// Hears of each message's acknowledgement or error, by its id, on a thread of nats.c's.
    typealias Acknowledgement = @Sendable (_ messageID: String, _ result: Result<PublishAck, NATSError>) -> Void

    private struct Outgoing {
        let data: Data
        let subject: String
        let messageID: String
        let timeout: Duration
        let stream: String

        /// What is being published, for errors: `appending message r1.17 to stream ORDERS`.
        var what: String {
            "appending message \(messageID) to stream \(stream)"
        }
    }

    private let handle: NATSHandle
    private let context: CPointer
    private let onAcknowledgement: Acknowledgement
    /// The messages waiting to be sent, whether someone is sending them, and how many were handed to
    /// nats.c and not yet reported back.
    private struct Outbox {
        var messages: [Outgoing] = []
        var sending = false
        var awaiting = 0
        var queueBatches = 0
    }

    private let queue = DispatchQueue(label: "DispatchStoreNATS.publisher")
    private let outboxLock = ConditionLock()
    private var outbox = Outbox()
    /// nats.c's limit of messages awaiting their acknowledgement, beyond which a send waits.
    private let maximumPending: Int
    /// The key under which the C callback finds this publisher.
    private let key: UInt

    /// Publishers by key, for the C callback (which gets the key, never a pointer to an object that
    /// may be gone).
    private static let registry = Registry<AsyncPublisher>()

    /// Creates a publisher on the connection of `handle`.
    ///
    /// - Parameters:
    ///   - handle: The connection.
    ///   - maximumPending: How many messages may await their acknowledgement at once; a send beyond
    ///     it waits, on the publisher's queue, up to 200 ms for one to come back, then fails.
    ///   - onAcknowledgement: Hears of each message's acknowledgement or error.
    /// - Throws: ``NATSError`` when the connection is closed or nats.c cannot make the context.
    init(
        handle: NATSHandle,
        maximumPending: Int = 8_192,
        onAcknowledgement: @escaping Acknowledgement
    )
        throws(NATSError)
    {
        self.handle = handle
        self.onAcknowledgement = onAcknowledgement
        self.maximumPending = maximumPending
        key = Self.registry.newKey()
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
        Self.registry.add(self, for: key)
    }

    deinit {
        Self.registry.remove(key)
    }

    /// Sends `data` to `subject` with the id `messageID`, appending it to `stream`; its
    /// acknowledgement or error comes to `onAcknowledgement`.
    ///
    /// - Parameters:
    ///   - data: The payload.
    ///   - subject: The subject.
    ///   - messageID: The message's id (`Nats-Msg-Id`).
    ///   - timeout: How long the acknowledgement may take; then it is reported as a
    ///     ``NATSError/Code/timeout``. Keep it in seconds: nats.c registers the message before it
    ///     sends it, and a timeout that fires first frees the message while it is being sent.
    ///   - stream: The stream, for errors.
    func send(_ data: Data, to subject: String, messageID: String, timeout: Duration, stream: String) {
        let message = Outgoing(
            data: data,
            subject: subject,
            messageID: messageID,
            timeout: timeout,
            stream: stream
        )
        let sender = withOutbox { outbox -> Sender? in
            outbox.messages.append(message)
            guard !outbox.sending else { return nil }
            outbox.sending = true
            return outbox.awaiting + outbox.messages.count < maximumPending / 2 ? .caller : .queue
        }
        switch sender {
        case .caller: drain(rounds: Self.callerRounds)
        case .queue: queue.async { [self] in drain(rounds: .max) }
        case nil: break
        }
    }

    /// How many batches the publisher's queue sent, rather than the callers of `send` (for tests).
    var batchesSentByQueue: Int {
        withOutbox { $0.queueBatches }
    }

    // MARK: Internals

    @inline(__always)
    private func withOutbox<Result>(_ body: (inout Outbox) -> Result) -> Result {
        outboxLock.withLock { body(&outbox) }
    }

    /// Who sends what waits in the outbox.
    private enum Sender {
        /// The caller of `send`, which found nobody sending.
        case caller
        /// The publisher's queue.
        case queue
    }

    /// How many batches the caller of `send` hands to nats.c before the queue takes over.
    private static let callerRounds = 4

    /// Sends what waits in the outbox, batch after batch, until it is empty; after `rounds` batches,
    /// or when a batch could make nats.c wait, the publisher's queue goes on.
    private func drain(rounds: Int) {
        var round = 0
        while true {
            let batch = withOutbox { outbox -> [Outgoing]? in
                if outbox.messages.isEmpty {
                    outbox.sending = false
                    return []
                }
                // Left to the queue: the caller has sent its share, or nats.c might make it wait.
                if rounds != .max, round >= rounds || outbox.awaiting + outbox.messages.count >= maximumPending / 2 {
                    return nil
                }
                defer { outbox.messages = [] }
                outbox.awaiting += outbox.messages.count
                if rounds == .max { outbox.queueBatches += 1 }
                return outbox.messages
            }
            guard let batch else {
                queue.async { [self] in drain(rounds: .max) }
                return
            }
            guard !batch.isEmpty else { return }
            round += 1
            var failures: [(String, NATSError)] = []
            do throws(NATSError) {
                // One use of the connection for the whole batch.
                try handle.beginUse(stream: batch[0].stream)
                defer { handle.endUse() }
                for message in batch {
                    if let failure = publish(message) { failures.append((message.messageID, failure)) }
                }
            } catch {
                failures = batch.map { ($0.messageID, error) }
            }
            if !failures.isEmpty {
                withOutbox { $0.awaiting = max(0, $0.awaiting - failures.count) }
            }
            for (messageID, failure) in failures {
                onAcknowledgement(messageID, .failure(failure))
            }
        }
    }

    /// Hands the message to nats.c, with a use of the connection held; returns the error when it did
    /// not take it.
    private func publish(_ outgoing: Outgoing) -> NATSError? {
        var message: OpaquePointer?
        var status = outgoing.data.withUnsafeBytes { bytes in
            natsMsg_Create(&message, outgoing.subject, nil, bytes.baseAddress, Int32(bytes.count))
        }
        guard status == NATS_OK, let created = message else {
            return handle.error(status, outgoing.what, stream: outgoing.stream)
        }
        status = natsMsgHeader_Set(created, "Nats-Msg-Id", outgoing.messageID)
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = outgoing.timeout.milliseconds
        if status == NATS_OK { status = js_PublishMsgAsync(context.pointer, &message, &options) }
        // On success nats.c took the message and cleared the pointer: this destroys nothing.
        natsMsg_Destroy(message)
        return status == NATS_OK ? nil : handle.error(status, outgoing.what, stream: outgoing.stream)
    }

    /// Called by nats.c, once per message: with its acknowledgement, or with its error (a timeout
    /// included).
    fileprivate func acknowledged(
        _ message: OpaquePointer?,
        _ ack: UnsafeMutablePointer<jsPubAck>?,
        _ failure: UnsafeMutablePointer<jsPubAckErr>?
    ) {
        withOutbox { $0.awaiting = max(0, $0.awaiting - 1) }
        guard let message, let id = header(message, "Nats-Msg-Id") else { return }
        if let ack {
            onAcknowledgement(id, .success(PublishAck(ack.pointee)))
            return
        }
        let status = failure?.pointee.Err ?? NATS_ERR
        let code = failure?.pointee.ErrCode ?? jsErrCode(0)
        let subject = String(cString: natsMsg_GetSubject(message))
        var error = handle.error(status, jetStreamCode: code, "publishing message \(id)", subject: subject)
        if error.code != .notPermitted, let text = failure?.pointee.ErrText.map({ String(cString: $0) }), !text.isEmpty
        {
            error = NATSError(
                error.code,
                servers: error.servers,
                jetStreamCode: error.jetStreamCode,
                message: "publishing message \(id) to subject \(subject) on \(handle.serverList) failed: \(text)"
                    + (error.jetStreamCode.map { " (JetStream error \($0))" } ?? "")
            )
        }
        onAcknowledgement(id, .failure(error))
    }

    /// The publisher registered under `key`, if it still exists.
    fileprivate static func publisher(for key: UInt) -> AsyncPublisher? {
        registry.object(for: key)
    }
}

/// The acknowledgement handler nats.c calls for each message published asynchronously.
private let publishAcknowledged: jsPubAckHandler = { _, message, ack, failure, closure in
    AsyncPublisher.publisher(for: UInt(bitPattern: closure))?.acknowledged(message, ack, failure)
    if let message { destroyNow(message) }
}
