import CNATS
import Foundation

/// A message delivered by an ``OrderedConsumer``.
struct DeliveredMessage: Sendable {
    /// Its sequence number in the stream.
    let sequence: UInt64
    /// How many messages of the stream after it the consumer had not delivered yet.
    let pending: UInt64
    /// When the stream stored it, in nanoseconds since 1970.
    let timestamp: Int64
    /// Its id (`Nats-Msg-Id`), if it has one.
    let messageID: String?
    /// Its payload.
    let data: Data
}

/// Reads a stream's messages in order from a start sequence, through a JetStream ordered consumer:
/// an ephemeral push consumer with flow control and heartbeats that nats.c recreates from the next
/// sequence when it detects a gap in the deliveries or missed heartbeats (its server died, the
/// connection moved to another server).
///
/// - Note: Not thread-safe: one thread calls ``next(timeout:)`` and ``close()`` (a replica's applier).
final class OrderedConsumer: @unchecked Sendable {
    // @unchecked: made on one thread and then used by one thread at a time (the applier that owns
    // it); the nats.c subscription's lifetime is guarded by `handle` while `next` runs.

    let stream: String
    private let handle: NATSHandle
    private var subscription: OpaquePointer?

    /// Subscribes to `subject` of `stream` from `startSequence`.
    ///
    /// Blocks (it creates the consumer with a JetStream API call): call it off the cooperative pool.
    ///
    /// - Throws: ``NATSError`` naming the stream.
    init(handle: NATSHandle, stream: String, subject: String, startSequence: UInt64) throws(NATSError) {
        self.stream = stream
        self.handle = handle
        subscription = try handle.withConnection(stream: stream) { _, jetStream throws(NATSError) in
            var options = jsSubOptions()
            jsSubOptions_Init(&options)
            options.Ordered = true
            options.Config.DeliverPolicy = startSequence > 1 ? js_DeliverByStartSequence : js_DeliverAll
            options.Config.OptStartSeq = startSequence > 1 ? startSequence : 0
            // Heartbeats every second: a consumer whose server died is noticed, and made again on
            // another server, within about two seconds (nats.c's default is five).
            options.Config.Heartbeat = 1_000_000_000
            var subscription: OpaquePointer?
            var code = jsErrCode(0)
            let status = stream.withCString { name in
                options.Stream = name
                return js_SubscribeSync(&subscription, jetStream, subject, nil, &options, &code)
            }
            guard status == NATS_OK, let subscription else {
                throw handle.error(
                    status,
                    jetStreamCode: code,
                    "reading stream \(stream) from message \(startSequence)",
                    stream: stream
                )
            }
            // The applier may fall behind a fast stream: let messages wait rather than be dropped.
            natsSubscription_SetPendingLimits(subscription, 1_000_000, 1 << 30)
            return subscription
        }
        // Held until `close()`: the reader calls the connection for every message.
        do {
            try handle.beginUse(stream: stream)
        } catch {
            natsSubscription_Destroy(subscription)
            throw error
        }
    }

    /// The next message, waiting at most `timeout`.
    ///
    /// - Returns: The message, or `nil` when none came in time (or the client dropped some for a
    ///   slow reader, which the ordered consumer then delivers again).
    /// - Throws: ``NATSError`` naming the stream when the subscription or the connection closed.
    func next(timeout: Duration) throws(NATSError) -> DeliveredMessage? {
        guard let subscription else {
            throw NATSError(.connectionClosed, servers: handle.servers, stream: stream, message: "the reader closed")
        }
        // The reader holds a use of the connection from `init` to `close()`.
        var message: OpaquePointer?
        let status = natsSubscription_NextMsg(&message, subscription, timeout.milliseconds)
        switch status {
        case NATS_OK: break
        case NATS_TIMEOUT, NATS_SLOW_CONSUMER, NATS_MISSED_HEARTBEAT, NATS_MISMATCH: return nil
        default: throw handle.error(status, "reading stream \(stream)", stream: stream)
        }
        guard let message else { return nil }
        defer { destroyNow(message) }
        var metadata: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&metadata, message) == NATS_OK, let metadata else { return nil }
        defer { jsMsgMetaData_Destroy(metadata) }
        return DeliveredMessage(
            sequence: metadata.pointee.Sequence.Stream,
            pending: metadata.pointee.NumPending,
            timestamp: metadata.pointee.Timestamp,
            messageID: header(message, "Nats-Msg-Id"),
            data: payload(of: message)
        )
    }

    /// Ends the subscription; the server then deletes the ephemeral consumer.
    ///
    /// Calling it again does nothing.
    func close() {
        guard let subscription else { return }
        self.subscription = nil
        natsSubscription_Unsubscribe(subscription)
        natsSubscription_Destroy(subscription)
        handle.endUse()
    }

    deinit {
        close()
    }
}
