import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

/// A state that is not `Encodable`.
struct Opaque: StateType {
    var value = 0
}

enum OpaqueAction: ActionType {
    case set(Int)
}

final class OpaqueReducer: Reducer<Opaque, OpaqueAction> {
    override func reduce(_ action: OpaqueAction, into state: inout Opaque) {
        if case .set(let value) = action { state.value = value }
    }
}

@Suite("Journal snapshots as bytes: encodeSnapshot and decodeSnapshot")
struct JournalSnapshotsTests {
    @Test("a snapshot of some stores restores their states and numbers into fresh stores, and keeps its position")
    func roundTrip() throws {
        let (live, liveStores) = try journaledChains()
        dispatchChain(live, 0..<50)
        let data = try Journal.encodeSnapshot(
            of: live,
            storeIdentifiers: ["a", "c"],
            position: 1_234,
            destination: "bucket TEST"
        )
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.hasPrefix("{\"format\":\"DispatchStore snapshot\",\"version\":1,"))
        #expect(text.contains("\"records\":1234"))

        let (fresh, freshStores) = try journaledChains()
        let contents = try Journal.decodeSnapshot(data, for: fresh, source: "bucket TEST")
        #expect(contents.position == 1_234 && contents.problems.isEmpty)
        #expect(contents.sequenceNumbers == ["a": liveStores[0].sequenceNumber, "c": liveStores[2].sequenceNumber])
        #expect(freshStores[0].sequenceNumber == 0)  // nothing changed before restore()
        contents.restore()
        #expect(freshStores[0].state == liveStores[0].state && freshStores[2].state == liveStores[2].state)
        #expect(freshStores[0].sequenceNumber == liveStores[0].sequenceNumber)
        #expect(freshStores[1].sequenceNumber == 0 && freshStores[1].state == Chain())
        // The restored stores go on from there, as the live ones do.
        live.dispatch(ChainAction.mix(9), to: "a", mode: .sync)
        fresh.dispatch(ChainAction.mix(9), to: "a", mode: .sync)
        #expect(freshStores[0].state == liveStores[0].state)
    }

    @Test("damaged bytes are refused before any store changes, naming the source")
    func damaged() throws {
        let (live, _) = try journaledChains()
        dispatchChain(live, 0..<10)
        var data = try Journal.encodeSnapshot(of: live, storeIdentifiers: ["a"], position: 10, destination: "x")
        data[data.count - 3] ^= 0x01
        let (fresh, freshStores) = try journaledChains()
        #expect {
            _ = try Journal.decodeSnapshot(data, for: fresh, source: "bucket TEST, key snapshot.10")
        } throws: { error in
            guard let error = error as? JournalError else { return false }
            return error.code == .corruptSnapshot && error.message.contains("bucket TEST, key snapshot.10")
                && error.message.contains("digest")
        }
        #expect {
            _ = try Journal.decodeSnapshot(data.prefix(20), for: fresh, source: "bucket TEST")
        } throws: { error in
            (error as? JournalError)?.code == .corruptSnapshot
        }
        #expect(freshStores[0].sequenceNumber == 0)
    }

    @Test("a store the dispatcher lacks is reported and ignored")
    func unknownStore() throws {
        let (live, _) = try journaledChains()
        dispatchChain(live, 0..<10)
        let data = try Journal.encodeSnapshot(of: live, storeIdentifiers: ["a", "d"], position: 10, destination: "x")
        let fresh = Dispatcher()
        let only = Store<Chain, ChainAction>(identifier: "a", reducer: ChainReducer())
        try fresh.register(store: only)
        let contents = try Journal.decodeSnapshot(data, for: fresh, source: "bucket TEST")
        #expect(contents.problems.map(\.code) == [.unknownStore])
        #expect(contents.problems.first?.storeIdentifier == "d")
        #expect(Array(contents.sequenceNumbers.keys) == ["a"])
    }

    @Test("an unregistered store or a state that is not Encodable is an error naming the store")
    func refusesWhatItCannotEncode() throws {
        let (live, _) = try journaledChains()
        let opaque = Store<Opaque, OpaqueAction>(identifier: "opaque", reducer: OpaqueReducer())
        try live.register(store: opaque)
        #expect {
            _ = try Journal.encodeSnapshot(of: live, storeIdentifiers: ["a", "zz"], position: 0, destination: "x")
        } throws: { error in
            (error as? JournalError)?.code == .unknownStore && (error as? JournalError)?.storeIdentifier == "zz"
        }
        #expect {
            _ = try Journal.encodeSnapshot(of: live, storeIdentifiers: ["opaque"], position: 0, destination: "x")
        } throws: { error in
            (error as? JournalError)?.code == .notCodable && (error as? JournalError)?.storeIdentifier == "opaque"
        }
    }
}
