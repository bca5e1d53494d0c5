import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation
import NATSTestSupport
import TestSupport
import Testing

@testable import DispatchStoreNATS

@Suite("Replication's defaults: the stream kept by three servers on a cluster", .serialized)
struct ReplicationDefaultsTests {
    @Test("on a cluster given one URL, the stream and its bucket are kept by three servers; on one server, by one")
    func replicasFromTheCluster() async throws {
        let cluster = try await NATSTestCluster.start(nodes: 3)
        defer { cluster.stop() }
        // One URL: the cluster's size comes from the servers, not from the list given.
        let replica = try await Replica.start([cluster.urls[1]], stream: "LEDGER")
        #expect(replica.replication.catchUp.streamReplicas == 3)
        let connection = try await NATSConnection.connect(to: cluster.urls)
        #expect(try await connection.streamInfo("LEDGER").replicas == 3)
        #expect(try await connection.streamInfo("KV_LEDGER-snapshots").replicas == 3)
        await replica.replication.close()
        await connection.close()

        let single = try await NATSTestCluster.start(nodes: 1)
        defer { single.stop() }
        let alone = try await Replica.start(single.urls, stream: "LEDGER")
        #expect(alone.replication.catchUp.streamReplicas == 1)
        try await alone.replication.perform(LedgerAction.mix(1))
        await alone.replication.close()
    }

    @Test("an existing stream and bucket with fewer replicas are raised; one the servers cannot raise is refused")
    func existingStreams() async throws {
        let cluster = try await NATSTestCluster.start(nodes: 3)
        defer { cluster.stop() }
        let connection = try await NATSConnection.connect(to: cluster.urls)
        // As the earlier default made them: one replica each.
        try await connection.createStream(StreamConfiguration(name: "OLD", subjects: ["dispatchstore.OLD"]))
        _ = try await connection.keyValueBucket("OLD-snapshots", replicas: 1)
        try await connection.publish(
            try ActionLog.record(
                of: LedgerAction.mix(7),
                id: 1,
                mode: .sync,
                storeIdentifiers: ["ledger"],
                destination: "stream OLD"
            ),
            to: "dispatchstore.OLD",
            messageID: "earlier.1"
        )
        let replica = try await Replica.start([cluster.urls[0]], stream: "OLD")
        #expect(replica.replication.catchUp.streamReplicas == 3)
        #expect(try await connection.streamInfo("OLD").replicas == 3)
        #expect(try await connection.streamInfo("KV_OLD-snapshots").replicas == 3)
        // The message appended before is still there, and applied.
        #expect(replica.ledger.state.value == mixed([7]))
        try await replica.replication.perform(LedgerAction.mix(8))
        #expect(replica.ledger.state.value == mixed([7, 8]))
        await replica.replication.close()

        // Fewer asked than the stream has: it is left as it is.
        let fewer = try await Replica.start(cluster.urls, stream: "OLD", replicas: 1)
        #expect(fewer.replication.catchUp.streamReplicas == 3)
        await fewer.replication.close()

        // More than the cluster has: refused, naming both numbers, and nothing started.
        await #expect {
            _ = try await Replica.start(cluster.urls, stream: "OLD", replicas: 5)
        } throws: { error in
            guard let error = error as? ReplicationError else { return false }
            return error.code == .invalidSetup && error.message.contains("stream OLD")
                && error.message.contains("from 3 to 5 replicas")
        }
        #expect(try await connection.streamInfo("OLD").replicas == 3)
        await connection.close()
    }
}
