package import DispatchStoreNATS
public import Foundation
import TestSupport

/// One server, or a cluster of three with JetStream replicated (R3 streams), started for a test and
/// stopped (each by its process id) by ``stop()``.
///
/// ```swift
/// let cluster = try await NATSTestCluster.start(nodes: 3)
/// defer { cluster.stop() }
/// ```
public final class NATSTestCluster: Sendable {
    /// The servers.
    public let servers: [NATSServer]
    /// The directory of their configurations, logs and JetStream stores.
    public let directory: URL
    /// The TLS and users the servers have, if any.
    public let security: TestSecurity?

    /// Every server's URL.
    public var urls: [String] { servers.map(\.url) }

    private init(servers: [NATSServer], directory: URL, security: TestSecurity?) {
        self.servers = servers
        self.directory = directory
        self.security = security
    }

    /// The options of the tests' own connections: as ``TestUser/admin`` over TLS on a secured cluster.
    package var adminOptions: NATSConnection.Options {
        security?.options(as: .admin) ?? NATSConnection.Options()
    }

    /// Starts `nodes` servers (1, or 3 in a cluster) and waits until JetStream answers on each.
    ///
    /// - Parameters:
    ///   - nodes: 1 or 3.
    ///   - maximumPayload: The servers' `max_payload` in bytes, when not the default 1 MiB.
    ///   - program: The `nats-server` to run.
    ///   - makeSecurity: Makes the users with their permissions, and the TLS on client and route
    ///     connections, given a directory for the certificates; `nil` for neither.
    /// - Returns: The running servers.
    /// - Throws: ``TestServerError`` when a server does not start or JetStream does not answer.
    public static func start(
        nodes: Int = 1,
        maximumPayload: Int? = nil,
        program: String = NATSServer.executable,
        security makeSecurity: ((URL) throws -> TestSecurity)? = nil
    ) async throws -> NATSTestCluster {
        precondition(nodes == 1 || nodes == 3, "a test cluster has 1 or 3 nodes")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nats-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var ports = Set<Int>()
        while ports.count < nodes * 2 {
            ports.insert(try NATSServer.freePort())
        }
        let security = try makeSecurity?(directory.appendingPathComponent("certificates"))
        let list = Array(ports)
        let clientPorts = Array(list[0..<nodes])
        let routePorts = Array(list[nodes...])
        var servers: [NATSServer] = []
        // A cluster name of its own: a route that reaches another test's cluster is refused.
        let clusterName = "C" + UUID().uuidString.prefix(8)
        for index in 0..<nodes {
            let name = "n\(index + 1)"
            var text = "server_name: \(name)\nlisten: 127.0.0.1:\(clientPorts[index])\n"
            text += "jetstream { store_dir: \"\(directory.path)/\(name)\" }\n"
            if let maximumPayload { text += "max_payload: \(maximumPayload)\n" }
            if let security { text += security.configuration() }
            if nodes > 1 {
                let routes = routePorts.map { "nats-route://127.0.0.1:\($0)" }.joined(separator: ", ")
                text +=
                    "cluster {\n  name: \(clusterName)\n  listen: 127.0.0.1:\(routePorts[index])\n  routes: [\(routes)]\n"
                    + (security.map { "  " + $0.routeConfiguration() + "\n" } ?? "") + "}\n"
            }
            let configuration = directory.appendingPathComponent("\(name).conf")
            try text.write(to: configuration, atomically: true, encoding: .utf8)
            servers.append(
                NATSServer(
                    name: name,
                    port: clientPorts[index],
                    configuration: configuration,
                    logDirectory: directory,
                    program: program
                )
            )
        }
        let cluster = NATSTestCluster(servers: servers, directory: directory, security: security)
        do {
            for server in servers {
                try server.start()
            }
            for server in servers {
                try server.waitUntilListening()
                try await cluster.waitForJetStream(at: server.url)
            }
        } catch {
            cluster.stop()
            throw error
        }
        return cluster
    }

    /// Waits until JetStream answers API calls through the server at `url`: on a cluster, once its
    /// servers elected a meta leader.
    public func waitForJetStream(at url: String, seconds: Double = 120) async throws {
        let deadline = Date().addingTimeInterval(seconds)
        var last = ""
        while Date() < deadline {
            do {
                let connection = try await NATSConnection.connect(to: [url], options: adminOptions)
                let answered: Bool
                do {
                    _ = try await connection.streamInfo("READINESS")
                    answered = true
                } catch {
                    answered = error.code == .streamNotFound
                    last = "\(error)"
                }
                await connection.close()
                if answered { return }
            } catch {
                last = "\(error)"
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestServerError("JetStream did not answer at \(url) within \(seconds) s: \(last)")
    }

    /// The server that leads the stream named `stream` now, as the servers report it.
    ///
    /// - Throws: ``TestServerError`` when no server names a leader within `seconds`.
    public func leader(ofStream stream: String, seconds: Double = 60) async throws -> NATSServer {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let running = servers.filter { $0.processIdentifier != nil }
            if let connection = try? await NATSConnection.connect(to: running.map(\.url), options: adminOptions) {
                let name = try? await connection.streamInfo(stream).leader
                await connection.close()
                if let server = servers.first(where: { $0.name == name }) { return server }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw TestServerError("no server named a leader of stream \(stream) within \(seconds) s")
    }

    /// Stops every server by its process id and removes the directory.
    public func stop() {
        for server in servers {
            server.stop()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}
