import DispatchStore
import Foundation
import NATSTestSupport
import TestSupport
import Testing

@testable import DispatchStoreNATS

@Suite("Replication: snapshots, catch-up from them, and gaps never skipped", .serialized)
struct ReplicationSnapshotTests {
    @Test("the replica that appended a snapshot's message writes it; a new replica starts from the latest")
    func snapshotsAndCatchUp() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let writer = try await Replica.start(cluster.urls, stream: "LEDGER", snapshotEvery: 10)
        let reader = try await Replica.start(cluster.urls, stream: "LEDGER", snapshotEvery: 10)
        for index in 1...35 {
            try await writer.replication.perform(LedgerAction.mix(UInt64(index)))
        }
        try await reader.replication.waitUntilCaughtUp(timeout: .seconds(60))
        await writer.replication.applier.waitForSnapshots()
        await reader.replication.applier.waitForSnapshots()
        // A snapshot taken while another is written waits, and only the newest waiting one is
        // written: under load, 20 may give way to 30.
        let written = writer.replication.applier.snapshotsWritten
        #expect(written.last == 30 && written == written.sorted() && Set(written).isSubset(of: [10, 20, 30]))
        #expect(reader.replication.applier.snapshotsWritten.isEmpty)

        let connection = try await NATSConnection.connect(to: cluster.urls)
        let bucket = try await connection.keyValueBucket("LEDGER-snapshots")
        let latest = try JSONDecoder().decode(
            SnapshotStore.Manifest.self,
            from: try #require(await bucket.entry(for: "latest")).value
        )
        let previous = try JSONDecoder().decode(
            SnapshotStore.Manifest.self,
            from: try #require(await bucket.entry(for: "previous")).value
        )
        let before = written.dropLast().last ?? 0
        #expect(
            latest.sequence == 30 && previous.sequence == before && latest.stream == "LEDGER" && latest.version == 1
        )
        #expect(
            latest.format == "DispatchStoreNATS snapshot"
                && latest.writer == writer.replication.applier.context.ownPrefix
                && latest.writer.hasPrefix(writer.replication.configuration.replicaName + ".")
        )
        // Chunks older than the previous snapshot are purged.
        #expect(Set(try await bucket.keys()) == ["latest", "previous", "chunk.\(before).0", "chunk.30.0"])
        await connection.close()

        let late = try await Replica.start(cluster.urls, stream: "LEDGER", snapshotEvery: 10)
        let report = late.replication.catchUp
        #expect(report.snapshotSequence == 30 && report.caughtUp == 5 && report.lastSequence == 35)
        #expect(report.problems.isEmpty && converged(writer, late))
        for replica in [writer, reader, late] {
            await replica.replication.close()
        }
    }

    @Test("a snapshot larger than the server's max_payload is written in chunks and read back whole")
    func chunks() async throws {
        let cluster = try await NATSTestCluster.start(maximumPayload: 8_192)
        defer { cluster.stop() }
        let writer = try await Replica.start(cluster.urls, stream: "LEDGER", snapshotEvery: 20)
        let line = String(repeating: "x", count: 2_000)
        for index in 1...20 {
            try await writer.replication.perform(LedgerAction.pad("\(index) \(line)"))
        }
        await writer.replication.applier.waitForSnapshots()
        let connection = try await NATSConnection.connect(to: cluster.urls)
        let bucket = try await connection.keyValueBucket("LEDGER-snapshots")
        let manifest = try JSONDecoder().decode(
            SnapshotStore.Manifest.self,
            from: try #require(await bucket.entry(for: "latest")).value
        )
        #expect(manifest.sequence == 20 && manifest.chunks >= 6 && manifest.bytes > 40_000)
        await connection.close()
        let late = try await Replica.start(cluster.urls, stream: "LEDGER")
        #expect(late.replication.catchUp.snapshotSequence == 20 && late.replication.catchUp.caughtUp == 0)
        #expect(converged(writer, late))
        await writer.replication.close()
        await late.replication.close()
    }

    @Test("a damaged latest snapshot is passed over and reported; the previous one and the stream make up for it")
    func damagedSnapshot() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let writer = try await Replica.start(cluster.urls, stream: "LEDGER", snapshotEvery: 10)
        for index in 1...25 {
            try await writer.replication.perform(LedgerAction.mix(UInt64(index)))
        }
        await writer.replication.applier.waitForSnapshots()
        let connection = try await NATSConnection.connect(to: cluster.urls)
        let bucket = try await connection.keyValueBucket("LEDGER-snapshots")
        try await bucket.put(Data("not the snapshot".utf8), for: "chunk.20.0")
        await connection.close()
        let late = try await Replica.start(cluster.urls, stream: "LEDGER")
        let report = late.replication.catchUp
        #expect(report.snapshotSequence == 10 && report.caughtUp == 15)
        #expect(report.problems.map(\.code) == [.snapshot])
        #expect(
            report.problems.first?.message.contains("Snapshot 20 in bucket LEDGER-snapshots holds 16 bytes") == true
        )
        #expect(converged(writer, late))
        await writer.replication.close()
        await late.replication.close()
    }

    @Test("a new replica finding messages discarded and no snapshot stops with an error naming the gap")
    func gapAtStart() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let writer = try await Replica.start(cluster.urls, stream: "LEDGER", maximumMessages: 20)
        for index in 1...50 {
            try await writer.replication.perform(LedgerAction.mix(UInt64(index)))
        }
        await #expect {
            _ = try await Replica.start(cluster.urls, stream: "LEDGER")
        } throws: { error in
            guard let error = error as? ReplicationError else { return false }
            return error.code == .gap && error.sequence == 1
                && error.message.contains("Stream LEDGER no longer holds messages 1 to 30")
        }
        await writer.replication.close()
    }

    @Test("with snapshots, a replica finding messages discarded starts from a snapshot covering them")
    func gapCoveredAtStart() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let writer = try await Replica.start(cluster.urls, stream: "LEDGER", snapshotEvery: 10, maximumMessages: 20)
        for index in 1...55 {
            try await writer.replication.perform(LedgerAction.mix(UInt64(index)))
        }
        await writer.replication.applier.waitForSnapshots()
        let late = try await Replica.start(cluster.urls, stream: "LEDGER")
        #expect(late.replication.catchUp.snapshotSequence == 50 && late.replication.catchUp.caughtUp == 5)
        #expect(converged(writer, late))
        await writer.replication.close()
        await late.replication.close()
    }

    @Test("a running replica that fell behind past the stream's limits loads a snapshot, or stops naming the gap")
    func gapWhileRunning() async throws {
        for snapshots in [true, false] {
            let cluster = try await NATSTestCluster.start()
            defer { cluster.stop() }
            let writer = try await Replica.start(
                cluster.urls,
                stream: "LEDGER",
                snapshotEvery: snapshots ? 10 : nil,
                maximumMessages: 20
            )
            // The reader stops at message 5 until the gate opens.
            let gate = Gate()
            let reader = try await Replica.start(cluster.urls, stream: "LEDGER") { applied in
                if applied.sequence == 5 { _ = gate.wait() }
            }
            for index in 1...60 {
                try await writer.replication.perform(LedgerAction.mix(UInt64(index)))
            }
            await writer.replication.applier.waitForSnapshots()
            // The reader's consumer had the messages already: make it read the stream again, as after
            // a reconnect, from where it is (it returns at once: there is nothing to deliver again).
            await reader.replication.applier.readAgain(from: 6)
            // A service runs it: `run` ends with the replica's failure.
            let running = Task { try await reader.replication.run() }
            gate.open()
            if snapshots {
                try await reader.replication.waitUntilCaughtUp(timeout: .seconds(60))
                #expect(reader.replication.applier.counts.snapshotsLoaded == 1)
                #expect(converged(writer, reader) && reader.replication.failure == nil)
                // Cancelled, `run` closes the replica and returns.
                running.cancel()
                try await running.value
                await #expect(throws: ReplicationError.self) {
                    try await reader.replication.perform(LedgerAction.mix(0))
                }
            } else {
                await #expect {
                    try await reader.replication.waitUntilCaughtUp(timeout: .seconds(60))
                } throws: { error in
                    guard let error = error as? ReplicationError else { return false }
                    return error.code == .gap && error.sequence == 6
                        && error.message.contains("Stream LEDGER no longer holds messages 6 to 40")
                        && error.message.contains("it stopped after message 5 rather than skip them")
                }
                #expect(reader.replication.failure?.code == .gap && reader.errors.current.map(\.code) == [.gap])
                await #expect {
                    try await running.value
                } throws: { error in
                    (error as? ReplicationError)?.code == .gap
                }
                #expect(reader.ledger.sequenceNumber == 5)
                await #expect(throws: ReplicationError.self) {
                    try await reader.replication.perform(LedgerAction.mix(0))
                }
            }
            await writer.replication.close()
            await reader.replication.close()
        }
    }
}
