import CNATS
import DispatchStore
package import Foundation

/// A message a ``StreamReader`` delivered.
package struct DeliveredMessage: Sendable {
    /// Its sequence number in the stream.
    package let sequence: UInt64
    /// How many messages of the stream after it the reader had not delivered yet.
    package let pending: UInt64
    /// When the stream stored it, in nanoseconds since 1970.
    package let timestamp: Int64
    /// Its id (`Nats-Msg-Id`), if it has one.
    package let messageID: String?
    /// Its payload.
    package let data: Data
}

/// Reads a stream's messages in order from a start sequence, through a JetStream ordered consumer,
/// and hands each to a closure on the subscription's own delivery thread (nats.c's).
///
/// An ordered consumer is an ephemeral push consumer with flow control and heartbeats, which nats.c
/// makes again from the next sequence number when it detects a gap in the deliveries or missed
/// heartbeats (its server died, the connection moved to another server). The closure may block, to
/// hold the deliveries back: nats.c then stops answering the server's flow control, and the server
/// stops sending, so that memory does not grow with the stream.
///
/// - Note: Thread-safe. The closure is called on one thread, one message at a time, in order; after
///   ``close()`` returns it is no longer called for a message that was not handed to it already.
package final class StreamReader: Sendable {
    /// Hears of each message delivered.
    package typealias Deliver = @Sendable (DeliveredMessage) -> Void

    let stream: String
    private let handle: NATSHandle
    private let subscription: CPointer
    private let recipient: Recipient
    private let key: UInt
    private let closed = Locked(false)

    /// Where the C callback hands a reader's messages: registered before the subscription starts,
    /// so that none comes before it is there.
    private final class Recipient: Sendable {
        let deliver: Deliver

        init(_ deliver: @escaping Deliver) {
            self.deliver = deliver
        }
    }

    /// The recipients by key, for the C callback, which gets the key, never a pointer to an object
    /// that may be gone.
    private static let registry = Registry<Recipient>()

    /// Subscribes to `subject` of `stream` from `startSequence`.
    ///
    /// Blocks (it creates the consumer with a JetStream API call): call it off the cooperative pool.
    ///
    /// - Parameters:
    ///   - handle: The connection.
    ///   - stream: The stream's name.
    ///   - subject: The subject it stores.
    ///   - startSequence: The first message to deliver (1 for the stream's first).
    ///   - deliver: Hears of each message, on the subscription's thread.
    /// - Throws: ``NATSError`` naming the stream.
    package init(
        handle: NATSHandle,
        stream: String,
        subject: String,
        startSequence: UInt64,
        deliver: @escaping Deliver
    ) throws(NATSError) {
        self.stream = stream
        self.handle = handle
        let recipient = Recipient(deliver)
        self.recipient = recipient
        let key = Self.registry.newKey()
        self.key = key
        Self.registry.add(recipient, for: key)
        let subscription: CPointer
        do {
            subscription = try Self.subscribe(handle, stream, subject, startSequence, key)
        } catch {
            Self.registry.remove(key)
            throw error
        }
        // Held until `close()`: the connection is not destroyed under the subscription.
        do {
            try handle.beginUse(stream: stream)
        } catch {
            Self.registry.remove(key)
            natsSubscription_Unsubscribe(subscription.pointer)
            natsSubscription_Destroy(subscription.pointer)
            throw error
        }
        self.subscription = subscription
    }

    /// Subscribes through an ordered consumer whose messages go to the recipient under `key`.
    private static func subscribe(
        _ handle: NATSHandle,
        _ stream: String,
        _ subject: String,
        _ startSequence: UInt64,
        _ key: UInt
    ) throws(NATSError) -> CPointer {
        try handle.withConnection(stream: stream) { _, jetStream throws(NATSError) in
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
                return js_Subscribe(
                    &subscription,
                    jetStream,
                    subject,
                    readerDelivered,
                    UnsafeMutableRawPointer(bitPattern: key),
                    nil,
                    &options,
                    &code
                )
            }
            guard status == NATS_OK, let subscription else {
                throw handle.error(
                    status,
                    jetStreamCode: code,
                    "reading stream \(stream) from message \(startSequence)",
                    stream: stream
                )
            }
            // The flow control bounds what waits in nats.c's queue; these limits only keep nats.c
            // from dropping messages before it.
            natsSubscription_SetPendingLimits(subscription, 1_000_000, 1 << 30)
            return CPointer(subscription)
        }
    }

    /// Ends the subscription; the server then deletes the ephemeral consumer.
    ///
    /// Calling it again does nothing.
    package func close() {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        Self.registry.remove(key)
        natsSubscription_Unsubscribe(subscription.pointer)
        natsSubscription_Destroy(subscription.pointer)
        handle.endUse()
    }

    deinit {
        close()
    }

    /// Called by nats.c on the subscription's thread.
    fileprivate static func delivered(_ message: OpaquePointer, key: UInt) {
        guard let recipient = registry.object(for: key) else { return }
        var metadata: UnsafeMutablePointer<jsMsgMetaData>?
        guard natsMsg_GetMetaData(&metadata, message) == NATS_OK, let metadata else { return }
        defer { jsMsgMetaData_Destroy(metadata) }
        recipient.deliver(
            DeliveredMessage(
                sequence: metadata.pointee.Sequence.Stream,
                pending: metadata.pointee.NumPending,
                timestamp: metadata.pointee.Timestamp,
                messageID: header(message, "Nats-Msg-Id"),
                data: payload(of: message)
            )
        )
    }
}

/// The message handler nats.c calls for each message of a ``StreamReader``'s subscription; the
/// message is the handler's to free.
private let readerDelivered: natsMsgHandler = { _, _, message, closure in
    guard let message else { return }
    StreamReader.delivered(message, key: UInt(bitPattern: closure))
    destroyNow(message)
}
