import Foundation
import InventoryCore
import NATSTestSupport
import TestSupport
import Testing

@Suite("inventory --nats against servers with TLS and users: only replicas may append", .serialized)
struct SecuredInventoryTests {
    static let users = [TestUser.replica(of: "INVENTORY"), TestUser.reader(of: "INVENTORY")]

    @Test("replicas over TLS with a password from a file or the environment converge; the secret is never printed")
    func replicasWithCredentials() async throws {
        let cluster = try await NATSTestCluster.start { try TestSecurity(users: Self.users, directory: $0) }
        defer { cluster.stop() }
        let security = try #require(cluster.security)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let passwordFile = directory.file("password")
        try "replica-secret\n".write(to: passwordFile, atomically: true, encoding: .utf8)
        let url = cluster.urls[0].replacingOccurrences(of: "nats://", with: "tls://")
        let common = ["--nats", url, "--nats-ca", security.certificates.authority, "--nats-user", "replica"]
        let lines = GeneratedEvent.generate(60, seed: 9).map(\.line)
        let first = try await inventory(
            common + ["--nats-password-file", passwordFile.path, "--verbose"],
            input: lines[..<30]
        )
        let second = try await inventory(
            common + ["--verbose"],
            input: lines[30...],
            environment: ["NATS_PASSWORD": "replica-secret"]
        )
        for output in [first, second] {
            #expect(output.status == 0, "\(output.standardError)")
            #expect(!(output.standardOutput + output.standardError).contains("replica-secret"))
        }
        // The second caught up with the first's 30 events before appending its own.
        let caughtUp = try await inventory(common + ["--nats-password-file", passwordFile.path], input: [])
        #expect(caughtUp.status == 0, "\(caughtUp.standardError)")
        let summary = try Summary.decode(caughtUp.standardOutput)
        #expect(summary.stream?.last == 60 && summary.audit.events == 60)
        #expect(try Summary.decode(second.standardOutput).stream?.last == 60)

        // The reader exports the stream, and may not append to it.
        let reader = ["--nats", url, "--nats-ca", security.certificates.authority, "--nats-user", "reader"]
        let export = directory.file("export.jsonl").path
        let exported = try await inventory(
            reader + ["--export", export],
            input: [],
            environment: ["NATS_PASSWORD": "reader-secret"]
        )
        #expect(exported.status == 0, "\(exported.standardError)")
        #expect(exported.standardError.contains("Exported stream INVENTORY up to message 60"))
        let appending = try await inventory(reader, input: lines[..<1], environment: ["NATS_PASSWORD": "reader-secret"])
        #expect(appending.status == 1)
        #expect(
            appending.standardError.contains("inventory: error: Line 1 was not applied"),
            "\(appending.standardError)"
        )
        #expect(appending.standardError.contains("Permissions Violation for Publish to \"dispatchstore.INVENTORY\""))
    }

    @Test("no credentials, a wrong password, no password, an untrusted server: exit 1 naming the URL and the reason")
    func refused() async throws {
        let cluster = try await NATSTestCluster.start { try TestSecurity(users: Self.users, directory: $0) }
        defer { cluster.stop() }
        let security = try #require(cluster.security)
        let url = cluster.urls[0]
        let trusting = ["--nats", url, "--nats-ca", security.certificates.authority]
        let cases: [([String], [String: String], String)] = [
            (trusting, [:], "Authorization Violation"),
            (trusting + ["--nats-user", "replica"], ["NATS_PASSWORD": "guess"], "Authorization Violation"),
            (trusting + ["--nats-user", "replica"], [:], "--nats-user replica needs a password"),
            (
                ["--nats", url, "--nats-ca", security.certificates.otherAuthority, "--nats-user", "replica"],
                ["NATS_PASSWORD": "replica-secret"], "SSL handshake error"
            ),
            (
                trusting + ["--nats-token-file", "/nonexistent/token"], [:],
                "The token file /nonexistent/token cannot be read"
            ),
        ]
        for (arguments, environment, reason) in cases {
            let output = try await inventory(arguments, input: [], environment: environment)
            #expect(output.status == 1 && output.standardOutput.isEmpty, "\(arguments): \(output.standardError)")
            #expect(output.standardError.contains(reason), "\(arguments): \(output.standardError)")
            if !reason.hasPrefix("--") && !reason.hasPrefix("The token") {
                #expect(output.standardError.contains(url), "\(output.standardError)")
            }
            #expect(!output.standardError.contains("replica-secret"))
        }
    }
}

/// Runs the inventory with `input` lines on standard input.
private func inventory(
    _ arguments: [String],
    input lines: some Collection<String>,
    environment: [String: String] = [:]
) async throws -> Executables.Output {
    let input = Data((lines.map { $0 + "\n" }.joined()).utf8)
    var variables = ProcessInfo.processInfo.environment
    variables["NATS_PASSWORD"] = nil
    variables["NATS_TOKEN"] = nil
    variables.merge(environment) { $1 }
    let all = variables
    return try await offThePool { try Executables.run("inventory", arguments, input: input, environment: all) }
}
