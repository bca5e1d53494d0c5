import CNATS
package import Foundation

/// How a JetStream stream is made: its name, subjects, replicas and limits.
package struct StreamConfiguration: Sendable, Hashable {
    /// Where a stream keeps its messages.
    package enum Storage: Sendable, Hashable {
        /// In files, on each server's disk.
        case file
        /// In memory: lost when the servers stop.
        case memory
    }

    /// The stream's name (letters, digits, `-` and `_`).
    package var name: String
    /// The subjects whose messages it stores.
    package var subjects: [String]
    /// How many servers keep a copy: 1, or 3 on a cluster (R3) to survive the loss of one.
    package var replicas: Int
    /// Where the messages are kept.
    package var storage: Storage
    /// The most messages it keeps (older ones are discarded), or `nil` for no limit.
    package var maximumMessages: Int64?
    /// The most bytes it keeps (older messages are discarded), or `nil` for no limit.
    package var maximumBytes: Int64?
    /// How long a message id is remembered to discard a repeat of it (2 minutes by default).
    package var duplicateWindow: Duration

    /// A configuration with file storage, one replica, no limits and a 2-minute duplicate window.
    ///
    /// - Parameters:
    ///   - name: The stream's name.
    ///   - subjects: The subjects whose messages it stores.
    ///   - replicas: How many servers keep a copy.
    package init(name: String, subjects: [String], replicas: Int = 1) {
        self.name = name
        self.subjects = subjects
        self.replicas = replicas
        storage = .file
        maximumMessages = nil
        maximumBytes = nil
        duplicateWindow = .seconds(120)
    }
}

/// A stream's configuration and the range of messages it holds.
package struct StreamInfo: Sendable, Hashable {
    /// The stream's name.
    package let name: String
    /// The subjects whose messages it stores.
    package let subjects: [String]
    /// How many servers keep a copy.
    package let replicas: Int
    /// How many messages it holds.
    package let messages: UInt64
    /// The sequence number of the first message it holds; after the last one when it holds none.
    package let firstSequence: UInt64
    /// The sequence number of the last message appended (also after it was discarded), 0 before
    /// the first.
    package let lastSequence: UInt64
    /// The name of the server that leads the stream on a cluster (its `server_name`), if known.
    package let leader: String?
}

/// The server's acknowledgement of a message stored in a stream.
package struct PublishAck: Sendable, Hashable {
    /// The stream that stored it.
    package let stream: String
    /// Its sequence number in the stream.
    package let sequence: UInt64
    /// Whether the stream had stored a message with the same id within its duplicate window, and
    /// kept that one: ``sequence`` is then the first one's.
    package let duplicate: Bool
}

/// A message read back from a stream.
package struct StreamMessage: Sendable, Hashable {
    /// Its subject.
    package let subject: String
    /// Its sequence number in the stream.
    package let sequence: UInt64
    /// Its id (`Nats-Msg-Id`), if it was published with one.
    package let messageID: String?
    /// Its payload.
    package let data: Data
}

extension NATSConnection {
    /// The state of the stream named `name`.
    ///
    /// - Parameter name: The stream's name.
    /// - Returns: Its configuration and the range of messages it holds.
    /// - Throws: ``NATSError`` naming the stream: ``NATSError/Code/streamNotFound``,
    ///   ``NATSError/Code/timeout``, ...
    package func streamInfo(_ name: String) async throws(NATSError) -> StreamInfo {
        try await call(stream: name) { [handle] _, jetStream throws(NATSError) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(0)
            let status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
            guard status == NATS_OK, let info else {
                throw handle.error(status, jetStreamCode: code, "reading the state of stream \(name)", stream: name)
            }
            defer { jsStreamInfo_Destroy(info) }
            return StreamInfo(info.pointee)
        }
    }

    /// Creates the stream, or returns the state of the one of that name when it exists already
    /// (whatever its configuration).
    ///
    /// - Parameter configuration: The stream to create.
    /// - Returns: Its state.
    /// - Throws: ``NATSError`` naming the stream, with the JetStream error code when the server
    ///   refused it (for example 10065 when its subjects overlap another stream's).
    @discardableResult
    package func createStream(_ configuration: StreamConfiguration) async throws(NATSError) -> StreamInfo {
        let name = configuration.name
        return try await call(stream: name) { [handle] _, jetStream throws(NATSError) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(0)
            var status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
            if status == NATS_OK, let info {
                defer { jsStreamInfo_Destroy(info) }
                return StreamInfo(info.pointee)
            }
            guard code.rawValue == 10059 || status == NATS_NOT_FOUND else {
                throw handle.error(status, jetStreamCode: code, "reading the state of stream \(name)", stream: name)
            }
            code = jsErrCode(0)
            status = withCStrings(configuration.subjects) { subjects in
                var subjects = subjects
                return subjects.withUnsafeMutableBufferPointer { subjects in
                    var settings = jsStreamConfig()
                    jsStreamConfig_Init(&settings)
                    return name.withCString { cName in
                        settings.Name = cName
                        settings.Subjects = subjects.baseAddress
                        settings.SubjectsLen = Int32(subjects.count)
                        settings.Replicas = Int64(configuration.replicas)
                        settings.Storage = configuration.storage == .file ? js_FileStorage : js_MemoryStorage
                        settings.MaxMsgs = configuration.maximumMessages ?? -1
                        settings.MaxBytes = configuration.maximumBytes ?? -1
                        settings.Duplicates = Int64(configuration.duplicateWindow.milliseconds) * 1_000_000
                        return js_AddStream(&info, jetStream, &settings, nil, &code)
                    }
                }
            }
            if code.rawValue == 10058 {
                // Another client created it meanwhile.
                code = jsErrCode(0)
                status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
            }
            guard status == NATS_OK, let info else {
                throw handle.error(status, jetStreamCode: code, "creating stream \(name)", stream: name)
            }
            defer { jsStreamInfo_Destroy(info) }
            return StreamInfo(info.pointee)
        }
    }

    /// Raises the number of servers that keep a copy of the stream named `name` to `replicas`, when
    /// it has fewer; never lowers it.
    ///
    /// The servers copy the stream's messages to the new replicas themselves, while it stays in use.
    ///
    /// - Parameters:
    ///   - name: The stream's name (a key-value bucket's stream is `KV_<bucket>`).
    ///   - replicas: How many servers should keep a copy at least.
    /// - Returns: The stream's state, after the change when there was one.
    /// - Throws: ``NATSError`` naming the stream when it cannot be read, or the servers refused the
    ///   change (for example JetStream error 10074 on a server that is not in a cluster, or
    ///   "insufficient resources" when the cluster has fewer servers).
    @discardableResult
    func raiseReplicas(ofStream name: String, to replicas: Int) async throws(NATSError) -> StreamInfo {
        try await call(stream: name) { [handle] _, jetStream throws(NATSError) in
            var info: UnsafeMutablePointer<jsStreamInfo>?
            var code = jsErrCode(0)
            var status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
            guard status == NATS_OK, let info else {
                throw handle.error(status, jetStreamCode: code, "reading the state of stream \(name)", stream: name)
            }
            defer { jsStreamInfo_Destroy(info) }
            let current = info.pointee.Config.pointee.Replicas
            guard current < Int64(replicas) else { return StreamInfo(info.pointee) }
            info.pointee.Config.pointee.Replicas = Int64(replicas)
            var updated: UnsafeMutablePointer<jsStreamInfo>?
            status = js_UpdateStream(&updated, jetStream, info.pointee.Config, nil, &code)
            guard status == NATS_OK, let updated else {
                throw handle.error(
                    status,
                    jetStreamCode: code,
                    "raising stream \(name) from \(current) to \(replicas) replicas",
                    stream: name
                )
            }
            defer { jsStreamInfo_Destroy(updated) }
            return StreamInfo(updated.pointee)
        }
    }

    /// Deletes the stream named `name` and every message in it.
    ///
    /// - Parameter name: The stream's name.
    /// - Throws: ``NATSError`` naming the stream.
    package func deleteStream(_ name: String) async throws(NATSError) {
        try await call(stream: name) { [handle] _, jetStream throws(NATSError) in
            var code = jsErrCode(0)
            let status = js_DeleteStream(jetStream, name, nil, &code)
            guard status == NATS_OK else {
                throw handle.error(status, jetStreamCode: code, "deleting stream \(name)", stream: name)
            }
        }
    }

    /// Publishes `payload` to `subject` and waits for the stream to store it.
    ///
    /// A message id makes a retry safe: the stream stores a message once per id within its duplicate
    /// window, and acknowledges a repeat with ``PublishAck/duplicate`` and the first one's sequence.
    ///
    /// - Parameters:
    ///   - payload: The message's bytes; at most ``maximumPayload``.
    ///   - subject: A subject one stream stores.
    ///   - messageID: The message's id (`Nats-Msg-Id`), or `nil`.
    ///   - expectedLastSequence: Store it only when the stream's last message has this sequence
    ///     number (JetStream's stream-wide `Nats-Expected-Last-Sequence`, serialised by the stream's
    ///     leader on a cluster); `nil` for no condition.
    ///   - timeout: How long to wait for the acknowledgement.
    /// - Returns: The acknowledgement: the stream and the sequence number.
    /// - Throws: ``NATSError`` naming the subject: ``NATSError/Code/wrongLastSequence`` when the
    ///   expectation failed (JetStream error 10071), ``NATSError/Code/timeout`` when no
    ///   acknowledgement came (the message may still have been stored: retry with the same id),
    ///   ``NATSError/Code/noResponders`` when no stream stores the subject or its leader is being
    ///   elected, ``NATSError/Code/payloadTooLarge``.
    @discardableResult
    package func publish(
        _ payload: Data,
        to subject: String,
        messageID: String? = nil,
        expectedLastSequence: UInt64? = nil,
        timeout: Duration = .seconds(5)
    ) async throws(NATSError) -> PublishAck {
        try await call { [handle] _, jetStream throws(NATSError) in
            var options = jsPubOptions()
            jsPubOptions_Init(&options)
            options.MaxWait = timeout.milliseconds
            options.ExpectLastSeq = expectedLastSequence ?? 0
            let id = messageID.map { strdup($0) }
            defer { id.map { free($0) } }
            options.MsgId = id.map { UnsafePointer($0) } ?? nil
            var ack: UnsafeMutablePointer<jsPubAck>?
            var code = jsErrCode(0)
            let status = payload.withUnsafeBytes { bytes in
                js_Publish(&ack, jetStream, subject, bytes.baseAddress, Int32(bytes.count), &options, &code)
            }
            guard status == NATS_OK, let ack else {
                throw handle.error(status, jetStreamCode: code, "publishing to subject \(subject)")
            }
            defer { jsPubAck_Destroy(ack) }
            return PublishAck(ack.pointee)
        }
    }

    /// The message with sequence number `sequence` in the stream named `stream`.
    ///
    /// - Parameters:
    ///   - stream: The stream's name.
    ///   - sequence: The message's sequence number.
    /// - Returns: The message, or `nil` when the stream does not hold it (never stored, deleted or
    ///   discarded by the stream's limits).
    /// - Throws: ``NATSError`` naming the stream.
    package func message(in stream: String, sequence: UInt64) async throws(NATSError) -> StreamMessage? {
        try await call(stream: stream) { [handle] _, jetStream throws(NATSError) in
            var message: OpaquePointer?
            var code = jsErrCode(0)
            let status = js_GetMsg(&message, jetStream, stream, sequence, nil, &code)
            if status == NATS_NOT_FOUND || code.rawValue == 10037 { return nil }
            guard status == NATS_OK, let message else {
                throw handle.error(
                    status,
                    jetStreamCode: code,
                    "reading message \(sequence) of stream \(stream)",
                    stream: stream
                )
            }
            defer { natsMsg_Destroy(message) }
            return StreamMessage(
                subject: String(cString: natsMsg_GetSubject(message)),
                sequence: natsMsg_GetSequence(message),
                messageID: header(message, "Nats-Msg-Id"),
                data: payload(of: message)
            )
        }
    }
}

/// Frees `message`, a message this process owns (delivered to it, or handed back by nats.c), at once.
///
/// `natsMsg_Destroy` gives every message nats.c made to a collector thread of its own, and wakes it
/// when it sleeps: about one more thread switch for every few messages, and the waker often loses
/// its core to the collector (measured with nats-bench, N1). This calls what the collector calls,
/// `natsMsg_free`, which nats.c exports without declaring it in its header: looked up at run time,
/// with `natsMsg_Destroy` when a build of nats.c does not export it.
func destroyNow(_ message: OpaquePointer) {
    if let freeMessage {
        freeMessage(UnsafeMutableRawPointer(message))
    } else {
        natsMsg_Destroy(message)
    }
}

/// nats.c's `natsMsg_free(void *)`, if the library exports it.
private let freeMessage: (@convention(c) (UnsafeMutableRawPointer?) -> Void)? = {
    #if os(Linux)
    let everywhere: UnsafeMutableRawPointer? = nil  // RTLD_DEFAULT
    #else
    let everywhere = UnsafeMutableRawPointer(bitPattern: -2)  // RTLD_DEFAULT
    #endif
    guard let symbol = dlsym(everywhere, "natsMsg_free") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)
}()

/// The value of the header `key` of `message`, if it has one.
func header(_ message: OpaquePointer, _ key: String) -> String? {
    var value: UnsafePointer<CChar>?
    guard natsMsgHeader_Get(message, key, &value) == NATS_OK, let value else { return nil }
    return String(cString: value)
}

/// A copy of the payload of `message`.
func payload(of message: OpaquePointer) -> Data {
    let count = Int(natsMsg_GetDataLength(message))
    guard count > 0, let bytes = natsMsg_GetData(message) else { return Data() }
    return Data(bytes: bytes, count: count)
}

extension StreamInfo {
    init(_ info: jsStreamInfo) {
        let configuration = info.Config.pointee
        name = String(cString: configuration.Name)
        subjects = (0..<Int(configuration.SubjectsLen)).compactMap { index in
            configuration.Subjects?[index].map { String(cString: $0) }
        }
        replicas = Int(configuration.Replicas)
        messages = info.State.Msgs
        firstSequence = info.State.FirstSeq
        lastSequence = info.State.LastSeq
        leader = info.Cluster?.pointee.Leader.map { String(cString: $0) }
    }
}

extension PublishAck {
    init(_ ack: jsPubAck) {
        stream = ack.Stream.map { String(cString: $0) } ?? ""
        sequence = ack.Sequence
        duplicate = ack.Duplicate
    }
}
