import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

/// Four `Chain` stores (non-commutative, `Codable`) behind one dispatcher.
func journaledChains() throws -> (Dispatcher, [Store<Chain, ChainAction>]) {
    let dispatcher = Dispatcher()
    let stores = ["a", "b", "c", "d"].map { Store<Chain, ChainAction>(identifier: $0, reducer: ChainReducer()) }
    for store in stores {
        try dispatcher.register(store: store)
    }
    return (dispatcher, stores)
}

/// `count` `.sync` dispatches, every third to one store, the others to all.
func dispatchChain(_ dispatcher: Dispatcher, _ range: Range<Int>) {
    for index in range {
        let target = index % 3 == 0 ? ["a", "b", "c", "d"][index % 4] : nil
        dispatcher.dispatch(ChainAction.mix(UInt64(index) &* 2_654_435_761), to: target, mode: .sync)
    }
}

/// Leaves a journal behind as a crash of its process would: not closed, no last snapshot.
///
/// The journal is freed, which releases its directory's lock as the kernel releases a dead
/// process's.
func crash(_ journal: inout Journal?, of dispatcher: Dispatcher) {
    guard journal != nil else { return }
    dispatcher.unregister(middleware: journal!)
    #expect(isKnownUniquelyReferenced(&journal), "something still holds the crashed journal, and its lock")
    journal = nil
}

/// The names of the files in `directory`, sorted.
func fileNames(_ directory: TemporaryDirectory) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
}

@Suite("Journal: records, snapshots and recovery")
struct JournalTests {
    @Test("a new journal records every transaction; reopening recovers every store's state and number")
    func recoversFromRecords() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, liveStores) = try journaledChains()
        var journal: Journal? = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 1_000)
        #expect(journal?.recovery.recordCount == 0 && journal?.recovery.isClean == true)
        dispatchChain(live, 0..<300)
        #expect(journal?.recordCount == 300)
        #expect(try fileNames(directory) == ["journal.json", "journal.lock", "records-00000000000000000000.jsonl"])
        crash(&journal, of: live)

        let (fresh, freshStores) = try journaledChains()
        let recovered = try Journal(directory: directory.url.path, dispatcher: fresh, snapshotEvery: 1_000)

        #expect(recovered.recovery.isClean, "\(recovered.recovery)")
        #expect(recovered.recovery.snapshotGeneration == nil)
        #expect(recovered.recovery.replayedRecordCount == 300)
        #expect(recovered.recordCount == 300)
        #expect(freshStores.map(\.state) == liveStores.map(\.state))
        #expect(freshStores.map(\.sequenceNumber) == liveStores.map(\.sequenceNumber))
        #expect(recovered.recovery.description.hasPrefix("recovered 300 records in "))
    }

    @Test("a snapshot every N records: restart reads the latest and the records after it; older ones are removed")
    func snapshotsBoundRecovery() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, liveStores) = try journaledChains()
        var journal: Journal? = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 10)
        dispatchChain(live, 0..<95)
        crash(&journal, of: live)

        let names = try fileNames(directory)
        #expect(names.filter { $0.hasPrefix("snapshot-") }.count == 2)
        #expect(names.contains("snapshot-00000000000000000009.json"))
        #expect(names.contains("snapshot-00000000000000000008.json"))
        #expect(!names.contains("records-00000000000000000007.jsonl"))

        let (fresh, freshStores) = try journaledChains()
        let recovered = try Journal(directory: directory.url.path, dispatcher: fresh, snapshotEvery: 10)
        #expect(recovered.recovery.snapshotGeneration == 9)
        #expect(recovered.recovery.snapshotRecordCount == 90)
        #expect(recovered.recovery.replayedRecordCount == 5)
        #expect(recovered.recordCount == 95)
        #expect(freshStores.map(\.state) == liveStores.map(\.state))
    }

    @Test("close writes a last snapshot: the next start replays nothing and goes on in the same files")
    func closeSnapshots() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, liveStores) = try journaledChains()
        let journal = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 100)
        dispatchChain(live, 0..<42)
        try journal.close()
        try journal.close()
        let namesAfterClose = try fileNames(directory)

        let (fresh, freshStores) = try journaledChains()
        let recovered = try Journal(directory: directory.url.path, dispatcher: fresh, snapshotEvery: 100)
        #expect(recovered.recovery.replayedRecordCount == 0)
        #expect(recovered.recovery.snapshotRecordCount == 42)
        #expect(try fileNames(directory) == namesAfterClose)
        #expect(freshStores.map(\.state) == liveStores.map(\.state))
        dispatchChain(fresh, 42..<50)
        #expect(recovered.recordCount == 50)
    }

    @Test("4 threads of .async dispatches with snapshots taken meanwhile: recovery gives every store its live state")
    func concurrentWritersAndSnapshots() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, liveStores) = try journaledChains()
        var journal: Journal? = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 500)
        await offThePool {
            concurrently(4) { thread in
                for index in 0..<2_500 {
                    let value = UInt64(thread * 100_000 + index)
                    let target = index % 2 == 0 ? nil : ["a", "b", "c", "d"][(index + thread) % 4]
                    live.dispatch(ChainAction.mix(value), to: target, mode: .async)
                }
            }
            live.waitUntilIdle()
        }
        #expect(journal?.recordCount == 10_000)
        #expect(journal?.firstFailure == nil)
        crash(&journal, of: live)

        let (fresh, freshStores) = try journaledChains()
        let recovered = try Journal(directory: directory.url.path, dispatcher: fresh, snapshotEvery: 500)
        #expect(recovered.recovery.isClean, "\(recovered.recovery)")
        #expect(recovered.recordCount == 10_000)
        #expect(recovered.recovery.snapshotGeneration != nil)
        #expect(freshStores.map(\.state) == liveStores.map(\.state))
        #expect(freshStores.map(\.sequenceNumber) == liveStores.map(\.sequenceNumber))
    }

    @Test("run() returns once its task is cancelled, after writing the last snapshot")
    func journalRun() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, _) = try journaledChains()
        let journal = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 1_000)
        dispatchChain(live, 0..<7)
        let service = Task { try await journal.run() }
        service.cancel()
        try await service.value

        let (fresh, _) = try journaledChains()
        let recovered = try Journal(directory: directory.url.path, dispatcher: fresh)
        #expect(recovered.recovery.snapshotRecordCount == 7)
        #expect(recovered.recovery.replayedRecordCount == 0)
    }
}
