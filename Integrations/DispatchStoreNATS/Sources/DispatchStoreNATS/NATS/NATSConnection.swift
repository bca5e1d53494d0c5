import CNATS
import Foundation

/// A connection to a NATS server or cluster, with JetStream: streams, publishing, stored messages
/// and key-value buckets, through the nats.c client.
///
/// ```swift
/// let connection = try await NATSConnection.connect(to: ["nats://127.0.0.1:4222"])
/// let ack = try await connection.publish(Data("hello".utf8), to: "orders.new", messageID: "o-1")
/// print(ack.sequence)
/// await connection.close()
/// ```
///
/// The connection reconnects by itself when its server goes away, to any server of the list or of
/// the cluster, forever, until ``close()``; calls made meanwhile fail when their timeout passes.
/// Every failure is a ``NATSError`` naming the servers, the stream and, from JetStream, its error
/// code.
///
/// - Note: Thread-safe. The calls are `async` and never block a thread of the cooperative pool:
///   each nats.c call that may block runs on a thread of its own.
package final class NATSConnection: Sendable {
    /// How to connect, and how long to wait.
    package struct Options: Sendable {
        /// The name the server shows for the connection (in its monitoring), or `nil`.
        package var name: String?
        /// How long to wait for a server to accept the connection, for each server tried.
        package var connectTimeout: Duration = .seconds(2)
        /// How long JetStream API calls (a stream's state, a stored message, a key-value entry) wait
        /// for the server's answer.
        package var requestTimeout: Duration = .seconds(5)
        /// How often the client checks that the server still answers; with ``maximumPingsOut``, it
        /// bounds how long a server that stopped answering (paused, cut off) keeps the connection.
        package var pingInterval: Duration = .seconds(1)
        /// How many checks may go unanswered before the client gives the server up and reconnects.
        package var maximumPingsOut = 2
        /// How long to wait between two attempts to reconnect to the same server.
        package var reconnectWait: Duration = .milliseconds(250)
        /// Whether to connect only to the servers given, never to the other servers of their cluster
        /// that a server tells the client about.
        package var usesOnlyGivenServers = false
        /// Who the client is to the servers, when they ask.
        package var credentials: Replication.Credentials?
        /// How the client checks the servers, and proves who it is, over TLS; `nil` for no TLS
        /// unless a URL starts with `tls://`.
        package var tls: Replication.TLS?

        /// The defaults: a 2-second connect timeout, 5-second requests, a server given up after
        /// about 3 seconds of silence.
        package init() {}
    }

    /// The servers the connection was given.
    package let servers: [String]
    /// The options it was made with.
    package let options: Options
    package let handle: NATSHandle

    private init(handle: NATSHandle, options: Options) {
        self.handle = handle
        self.servers = handle.servers
        self.options = options
    }

    /// Connects to the first server of `servers` that answers.
    ///
    /// - Parameters:
    ///   - servers: Server URLs such as `nats://127.0.0.1:4222`; the client picks among them, and
    ///     learns the other servers of a cluster from the one it reaches.
    ///   - options: How to connect and how long to wait.
    /// - Returns: The connection.
    /// - Throws: ``NATSError`` with ``NATSError/Code/noServer`` naming every URL when none answers,
    ///   or ``NATSError/Code/invalidArgument`` for an empty list or a URL the client cannot read.
    package static func connect(
        to servers: [String],
        options: Options = Options()
    ) async throws(NATSError)
        -> NATSConnection
    {
        guard !servers.isEmpty else {
            throw NATSError(.invalidArgument, servers: [], message: "no NATS server URL was given")
        }
        let handle = try await BlockingCalls.run { () throws(NATSError) in
            try makeHandle(servers: servers, options: options)
        }
        return NATSConnection(handle: handle, options: options)
    }

    private static func makeHandle(servers: [String], options: Options) throws(NATSError) -> NATSHandle {
        var settings: OpaquePointer?
        var status = natsOptions_Create(&settings)
        guard status == NATS_OK, let settings else {
            throw NATSHandle.error(status, "preparing the connection", servers: servers)
        }
        defer { natsOptions_Destroy(settings) }
        status = withCStrings(servers) { urls in
            var urls = urls
            return natsOptions_SetServers(settings, &urls, Int32(urls.count))
        }
        guard status == NATS_OK else {
            throw NATSHandle.error(status, "reading the server URLs", servers: servers)
        }
        _ = natsOptions_SetTimeout(settings, options.connectTimeout.milliseconds)
        if let name = options.name { _ = natsOptions_SetName(settings, name) }
        _ = natsOptions_SetPingInterval(settings, options.pingInterval.milliseconds)
        _ = natsOptions_SetMaxPingsOut(settings, Int32(options.maximumPingsOut))
        _ = natsOptions_SetAllowReconnect(settings, true)
        _ = natsOptions_SetMaxReconnect(settings, -1)
        _ = natsOptions_SetReconnectWait(settings, options.reconnectWait.milliseconds)
        _ = natsOptions_SetReconnectJitter(settings, 100, 1_000)
        _ = natsOptions_SetIgnoreDiscoveredServers(settings, options.usesOnlyGivenServers)
        try secure(settings, options, servers: servers)
        let key = NATSHandle.registry.newKey()
        _ = natsOptions_SetErrorHandler(settings, connectionReportedError, UnsafeMutableRawPointer(bitPattern: key))
        var connection: OpaquePointer?
        status = natsConnection_Connect(&connection, settings)
        guard status == NATS_OK, let connection else {
            throw NATSHandle.error(status, "connecting", servers: servers)
        }
        var jetStreamOptions = jsOptions()
        jsOptions_Init(&jetStreamOptions)
        jetStreamOptions.Wait = options.requestTimeout.milliseconds
        var jetStream: OpaquePointer?
        status = natsConnection_JetStream(&jetStream, connection, &jetStreamOptions)
        guard status == NATS_OK, let jetStream else {
            let error = NATSHandle.error(status, "opening JetStream", servers: servers)
            natsConnection_Destroy(connection)
            throw error
        }
        return NATSHandle(servers: servers, connection: connection, jetStream: jetStream, key: key)
    }

    /// Sets the credentials and the TLS settings of `options` on `settings`.
    ///
    /// - Throws: ``NATSError`` naming the file that cannot be read, or the setting the client refused.
    private static func secure(_ settings: OpaquePointer, _ options: Options, servers: [String]) throws(NATSError) {
        func check(_ status: natsStatus, _ what: String) throws(NATSError) {
            guard status == NATS_OK else { throw NATSHandle.error(status, what, servers: servers) }
        }
        switch options.credentials {
        case .password(let user, let password)?:
            try check(natsOptions_SetUserInfo(settings, user, password), "setting the user \(user)")
        case .token(let token)?:
            try check(natsOptions_SetToken(settings, token), "setting the token")
        case .file(let path)?:
            try check(
                natsOptions_SetUserCredentialsFromFiles(settings, path, nil),
                "reading the credentials file \(path)"
            )
        case nil:
            break
        }
        let tlsURL = servers.contains { $0.lowercased().hasPrefix("tls://") }
        guard let tls = options.tls ?? (tlsURL ? Replication.TLS() : nil) else { return }
        try check(natsOptions_SetSecure(settings, true), "turning TLS on")
        if let authority = tls.trustedCertificates {
            try check(
                natsOptions_LoadCATrustedCertificates(settings, authority),
                "loading the certificates to trust from \(authority)"
            )
        }
        if let certificate = tls.certificate {
            try check(
                natsOptions_LoadCertificatesChain(settings, certificate, tls.privateKey ?? certificate),
                "loading the client certificate \(certificate) and its key \(tls.privateKey ?? certificate)"
            )
        }
    }

    /// Whether the connection is connected to a server now (not reconnecting, not closed).
    package var isConnected: Bool {
        (try? handle.withConnection { connection, _ in natsConnection_Status(connection) == NATS_CONN_STATUS_CONNECTED })
            ?? false
    }

    /// The connection's state, for messages: `connected to nats://127.0.0.1:4222`, `reconnecting`,
    /// `closed`.
    package var state: String {
        handle.stateDescription
    }

    /// The URLs of the servers the client knows of: those it was given and those their cluster
    /// told it about (nats.c's pool), each once.
    ///
    /// On a cluster, the server a client connects to names the cluster's other servers, so this is
    /// the cluster's size even when one URL was given (unless ``Options/usesOnlyGivenServers``).
    var knownServers: [String] {
        (try? handle.withConnection { connection, _ in
            var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
            var count: Int32 = 0
            guard natsConnection_GetServers(connection, &list, &count) == NATS_OK, let list else { return [] }
            defer { free(list) }
            var urls: [String] = []
            for index in 0..<Int(count) {
                guard let url = list[index] else { continue }
                urls.append(String(cString: url))
                free(url)
            }
            return urls
        }) ?? []
    }

    /// The largest message the server takes, in bytes (its `max_payload`; 1 MiB by default).
    package var maximumPayload: Int {
        (try? handle.withConnection { connection, _ in Int(natsConnection_GetMaxPayload(connection)) }) ?? 0
    }

    /// Closes the connection.
    ///
    /// Calls in flight fail with ``NATSError/Code/connectionClosed`` (or end when their timeout
    /// passes), later calls fail at once. Calling it again does nothing.
    package func close() async {
        _ = try? await BlockingCalls.run { [handle] () throws(NATSError) in handle.close() }
    }

    // MARK: Internals

    /// Runs `body` with the connection and its JetStream context on a thread of its own.
    func call<Result: Sendable>(
        stream: String? = nil,
        _ body: @escaping @Sendable (OpaquePointer, OpaquePointer) throws(NATSError) -> Result
    ) async throws(NATSError) -> Result {
        try await BlockingCalls.run { [handle] () throws(NATSError) in
            try handle.withConnection(stream: stream, body)
        }
    }
}
