import DispatchStore
import Foundation
import NATSTestSupport
import TestSupport
import Testing

@testable import DispatchStoreNATS

@Suite("Only replicas may append: credentials, TLS and permissions, against real servers", .serialized)
struct ReplicationSecurityTests {
    static let users = [
        TestUser.replica(of: "LEDGER"), TestUser.reader(of: "LEDGER"),
        TestUser(
            name: "lister",
            password: "lister-secret",
            publish: ["$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*", "$JS.FC.>"],
            subscribe: ["_INBOX.>"]
        ),
    ]

    @Test("three replicas over TLS with credentials, on a cluster with TLS routes, converge; a reader reads")
    func replicasOverTLS() async throws {
        let cluster = try await NATSTestCluster.start(nodes: 3) { try TestSecurity(users: Self.users, directory: $0) }
        defer { cluster.stop() }
        let security = try #require(cluster.security)
        let urls = cluster.urls.map { $0.replacingOccurrences(of: "nats://", with: "tls://") }
        var replicas: [Replica] = []
        for _ in 0..<3 {
            replicas.append(
                try await Replica.start(
                    urls,
                    stream: "LEDGER",
                    snapshotEvery: 10,
                    connection: security.options(as: Self.users[0])
                )
            )
        }
        for (index, replica) in replicas.enumerated() {
            for value in 1...10 {
                try await replica.replication.perform(LedgerAction.mix(UInt64(index * 100 + value)))
            }
        }
        for replica in replicas {
            try await replica.replication.waitUntilApplied(through: 30, timeout: .seconds(60))
        }
        #expect(converged(replicas[0], replicas[1]) && converged(replicas[1], replicas[2]))
        #expect(replicas[0].replication.catchUp.streamReplicas == 3)
        // The reader starts from the whole stream, and applies it; it may not append.
        var reading = security.options(as: Self.users[1])
        reading.name = "reader"
        let reader = try await Replica.start(urls, stream: "LEDGER", startsFromSnapshot: false, connection: reading)
        #expect(reader.replication.catchUp.caughtUp == 30 && converged(reader, replicas[0]))
        let started = ContinuousClock.now
        await #expect {
            try await reader.replication.perform(LedgerAction.mix(7))
        } throws: { error in
            guard let error = error as? ReplicationError else { return false }
            return error.code == .notPermitted && error.message.contains("Permissions Violation for Publish")
                && error.message.contains("dispatchstore.LEDGER")
        }
        // A clear error, not the perform's timeout.
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(reader.ledger.sequenceNumber == 30)
        for replica in replicas + [reader] {
            await replica.replication.close()
        }
    }

    @Test("no credentials, a wrong password, or a CA that did not sign the server's certificate: refused at start")
    func refusedAtStart() async throws {
        let cluster = try await NATSTestCluster.start { try TestSecurity(users: Self.users, directory: $0) }
        defer { cluster.stop() }
        let security = try #require(cluster.security)
        let url = cluster.urls[0]
        func start(_ options: NATSConnection.Options) async -> ReplicationError? {
            do {
                let replica = try await Replica.start([url], stream: "LEDGER", connection: options)
                await replica.replication.close()
                return nil
            } catch {
                return error as? ReplicationError
            }
        }
        let anonymous = await start(security.options(as: nil))
        #expect(anonymous?.code == .notPermitted, "\(String(describing: anonymous))")
        #expect(anonymous?.message.contains(url) == true && anonymous?.message.contains("uthorization") == true)
        var wrong = security.options(as: Self.users[0])
        wrong.credentials = .password(user: "replica", password: "guess")
        let wrongPassword = await start(wrong)
        #expect(wrongPassword?.code == .notPermitted, "\(String(describing: wrongPassword))")
        #expect(wrongPassword?.message.contains(url) == true)
        var untrusting = security.options(as: Self.users[0])
        untrusting.tls = Replication.TLS(trustedCertificates: security.certificates.otherAuthority)
        let untrusted = await start(untrusting)
        #expect(untrusted?.natsError?.code == .tls, "\(String(describing: untrusted))")
        #expect(untrusted?.message.contains(url) == true)
        var missing = security.options(as: Self.users[0])
        missing.tls = Replication.TLS(trustedCertificates: "/nonexistent/ca.pem")
        let unreadable = await start(missing)
        #expect(unreadable?.message.contains("/nonexistent/ca.pem") == true, "\(String(describing: unreadable))")
        // A user that may not make the JetStream call a replica needs (reading the stream): refused
        // with the server's words, not a timeout.
        let started = ContinuousClock.now
        let notAllowed = await start(security.options(as: Self.users[2]))
        #expect(notAllowed?.code == .notPermitted, "\(String(describing: notAllowed))")
        #expect(notAllowed?.message.contains("Permissions Violation for Publish to \"$JS.API.") == true)
        #expect(ContinuousClock.now - started < .seconds(30))
        // With the right ones, it starts.
        let allowed = await start(security.options(as: Self.users[0]))
        #expect(allowed == nil, "\(String(describing: allowed))")
    }
}
