@_spi(DispatchStoreNATS) import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

@Suite("Stores that refuse changes made outside their actions")
struct OutsideChangesTests {
    @Test("actions still reach the store, and its own operations may call updateState")
    func actionsStillApply() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore("replicated", reducer: CounterReducer())  // updateState in its operation
        try dispatcher.register(store: store)
        store.outsideChangeRefusal = "it follows the stream TEST"
        #expect(store.outsideChangeRefusal == "it follows the stream TEST")
        dispatcher.dispatch(CounterAction.add(3), mode: .sync)
        #expect(store.state.count == 3 && store.sequenceNumber == 1)
    }

    @Test("a recorder's restore is refused with an error naming the store, and no store changes")
    func recorderRefused() throws {
        let dispatcher = Dispatcher()
        let local = makeCounterStore("local")
        let followed = makeCounterStore("followed")
        try dispatcher.register(store: local)
        try dispatcher.register(store: followed)
        let recorder = RecorderMiddleware()
        dispatcher.register(middleware: recorder)
        dispatcher.dispatch(CounterAction.add(2), mode: .sync)
        followed.outsideChangeRefusal = "it follows the stream TEST"
        #expect(recorder.previous() == false)
        #expect {
            try recorder.jump(to: 0)
        } throws: { error in
            guard let error = error as? DispatchError else { return false }
            return error.code == .outsideChangeRefused && error.storeIdentifier == "followed"
                && error.message.contains("it follows the stream TEST")
        }
        #expect(local.state.count == 2 && followed.state.count == 2 && recorder.position == 1)
        followed.outsideChangeRefusal = nil
        #expect(followed.outsideChangeRefusal == nil)
        #expect(recorder.previous())
        #expect(local.state.count == 0 && followed.state.count == 0)
    }

    @Test("a journal refuses to open on a dispatcher with such a store, naming it")
    func journalRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (dispatcher, stores) = try journaledChains()
        stores[1].outsideChangeRefusal = "it follows the stream TEST"
        #expect {
            _ = try Journal(directory: directory.url.path, dispatcher: dispatcher)
        } throws: { error in
            guard let error = error as? JournalError else { return false }
            return error.code == .outsideChangeRefused && error.storeIdentifier == "b"
                && error.message.contains("it follows the stream TEST")
        }
    }

    @Test("a snapshot's restore sets the store: it is its owner's way to a known state")
    func snapshotRestoreStillSets() throws {
        let (live, liveStores) = try journaledChains()
        dispatchChain(live, 0..<20)
        let data = try Journal.encodeSnapshot(of: live, storeIdentifiers: ["a"], position: 20, destination: "x")
        let (fresh, freshStores) = try journaledChains()
        freshStores[0].outsideChangeRefusal = "it follows the stream TEST"
        try Journal.decodeSnapshot(data, for: fresh, source: "x").restore()
        #expect(freshStores[0].sequenceNumber == liveStores[0].sequenceNumber)
        #expect(freshStores[0].state == liveStores[0].state)
    }

    @Test("updateState outside the store's operations stops the program, naming the store and the reason")
    func updateStateStops() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let store = makeCounterStore("followed")
            store.outsideChangeRefusal = "it follows the stream TEST"
            store.updateState { $0.count += 1 }
        }
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(
            message.contains("store 'followed' refuses changes made outside its actions (it follows the stream TEST)")
        )
    }
}
