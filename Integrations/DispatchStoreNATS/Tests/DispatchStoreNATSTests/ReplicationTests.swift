@_spi(DispatchStoreNATS) import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation
import NATSTestSupport
import TestSupport
import Testing

@testable import DispatchStoreNATS

@Suite("Replication: stores replicated through a stream, against a real server", .serialized)
struct ReplicationTests {
    @Test("perform applies here before it returns (read-your-writes) and every replica converges")
    func readYourWrites() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let first = try await Replica.start(cluster.urls, stream: "LEDGER")
        let second = try await Replica.start(cluster.urls, stream: "LEDGER")
        var inputs: [UInt64] = []
        for index in 1...20 {
            let input = UInt64(index * 7_919)
            inputs.append(input)
            let outcome = try await first.replication.perform(LedgerAction.mix(input))
            #expect(outcome.sequence == UInt64(index) && outcome.result.succeeded)
            // Applied here already: no waiting.
            #expect(first.ledger.state.value == mixed(inputs) && first.ledger.sequenceNumber == UInt64(index))
        }
        let noted = try await second.replication.perform(TallyAction.note("done"))
        #expect(noted.sequence == 21 && noted.result.handledStores == ["tally"])
        #expect(try await first.replication.waitUntilCaughtUp(timeout: .seconds(60)) == 21)
        #expect(try await second.replication.waitUntilCaughtUp(timeout: .seconds(60)) == 21)
        #expect(converged(first, second))
        #expect(second.ledger.state.value == mixed(inputs) && second.tally.state.notes == ["done": 1])
        #expect(first.replication.lag.appliedSequence == 21 && first.errors.current.isEmpty)
        await first.replication.close()
        await second.replication.close()
    }

    @Test("two replicas performing 300 actions each at once, pipelined: one order, the same states everywhere")
    func concurrentPerforms() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let replicas = [
            try await Replica.start(cluster.urls, stream: "LEDGER"),
            try await Replica.start(cluster.urls, stream: "LEDGER"),
        ]
        let outcomes = try await withThrowingTaskGroup(of: (UInt64, UInt64).self) { group in
            for (index, replica) in replicas.enumerated() {
                for number in 0..<300 {
                    let input = UInt64(index * 1_000 + number + 1)
                    group.addTask {
                        let outcome = try await replica.replication.perform(LedgerAction.mix(input))
                        return (outcome.sequence, input)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let inStreamOrder = outcomes.sorted { $0.0 < $1.0 }
        #expect(inStreamOrder.map(\.0) == Array(1...600))
        for replica in replicas {
            try await replica.replication.waitUntilCaughtUp(timeout: .seconds(60))
        }
        #expect(converged(replicas[0], replicas[1]))
        #expect(replicas[0].ledger.state.value == mixed(inStreamOrder.map(\.1)))
        #expect(replicas[0].ledger.state.count == 600 && replicas[0].ledger.sequenceNumber == 600)
        for replica in replicas {
            await replica.replication.close()
        }
    }

    @Test("operations that finish later, on other threads, still commit in stream order on every replica")
    func laterOperations() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        var replicas: [(Store<Ledger, LedgerAction>, Replication)] = []
        for _ in 0..<2 {
            let dispatcher = Dispatcher()
            let ledger = Store<Ledger, LedgerAction>(identifier: "ledger", reducer: LaterLedgerReducer())
            try dispatcher.register(store: ledger)
            let replication = try await Replication(
                dispatcher: dispatcher,
                stores: [ledger],
                configuration: Replication.Configuration(servers: cluster.urls, stream: "LATER")
            )
            replicas.append((ledger, replication))
        }
        let outcomes = try await withThrowingTaskGroup(of: (UInt64, UInt64).self) { group in
            for (index, (_, replication)) in replicas.enumerated() {
                for number in 1...100 {
                    let input = UInt64(index * 1_000 + number)
                    group.addTask { (try await replication.perform(LedgerAction.mix(input)).sequence, input) }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let inStreamOrder = outcomes.sorted { $0.0 < $1.0 }.map(\.1)
        for (ledger, replication) in replicas {
            try await replication.waitUntilApplied(through: 200, timeout: .seconds(60))
            #expect(ledger.state.value == mixed(inStreamOrder) && ledger.sequenceNumber == 200)
            await replication.close()
        }
    }

    @Test("a new replica catches up from the stream and says how many messages it applied")
    func catchUp() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let first = try await Replica.start(cluster.urls, stream: "LEDGER")
        #expect(first.replication.catchUp.caughtUp == 0 && first.replication.catchUp.snapshotSequence == nil)
        for index in 1...50 {
            try await first.replication.perform(LedgerAction.mix(UInt64(index)))
        }
        let late = try await Replica.start(cluster.urls, stream: "LEDGER")
        let report = late.replication.catchUp
        #expect(report.caughtUp == 50 && report.lastSequence == 50 && report.snapshotSequence == nil)
        #expect(report.description.hasPrefix("caught up 50 messages from the start in "))
        #expect(converged(first, late))
        await first.replication.close()
        await late.replication.close()
    }

    @Test("non-replicated stores work as usual, and middleware see every action a replica applies")
    func localStoresAndMiddleware() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let replica = try await Replica.start(cluster.urls, stream: "LEDGER")
        let recorder = RecorderMiddleware()
        replica.dispatcher.register(middleware: recorder)
        let other = try await Replica.start(cluster.urls, stream: "LEDGER")
        try await other.replication.perform(LedgerAction.mix(3))
        try await replica.replication.perform(TallyAction.note("x"))
        replica.dispatcher.dispatch(ClickAction.click, mode: .sync)
        #expect(replica.clicks.state.count == 1)
        // The other replica's action, this one's, and the local click: three recorded transactions.
        #expect(recorder.count == 4)
        await #expect {
            try await replica.replication.perform(NotReplicated.one)
        } throws: { error in
            (error as? ReplicationError)?.code == .notReplicated
                && (error as? ReplicationError)?.message.contains("NotReplicated") == true
        }
        await replica.replication.close()
        await other.replication.close()
    }

    @Test("a dispatch that reaches a replicated store outside the stream is cancelled and reported; no store changes")
    func outsideChangesRefused() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let replica = try await Replica.start(cluster.urls, stream: "LEDGER")
        let recorder = RecorderMiddleware()
        replica.dispatcher.register(middleware: recorder)
        try await replica.replication.perform(LedgerAction.mix(5))
        let result = await replica.dispatcher.perform(LedgerAction.mix(6))
        #expect(result.cancelledStores == ["ledger"] && !result.succeeded)
        replica.dispatcher.dispatch(TallyAction.note("sneaky"), to: "tally", mode: .sync)
        #expect(replica.ledger.state.value == 5 && replica.tally.state.notes.isEmpty)
        #expect(replica.replication.refusedDispatches == 2)
        let errors = replica.errors.current
        #expect(errors.map(\.code) == [.changeOutsideStream, .changeOutsideStream])
        #expect(errors.first?.storeIdentifier == "ledger")
        #expect(
            errors.first?.message.contains(
                "reaches store 'ledger', which is replicated through stream LEDGER; it was cancelled before any store ran"
            ) == true
        )
        // A recorder's restore is refused too: it would change the store outside the stream.
        #expect(recorder.previous() == false)
        #expect(replica.ledger.outsideChangeRefusal?.contains("replicated through the NATS stream LEDGER") == true)
        // The local store still takes dispatches.
        replica.dispatcher.dispatch(ClickAction.click, mode: .sync)
        #expect(replica.clicks.state.count == 1)
        await replica.replication.close()
        // Closed: the stores take changes from anywhere again, and performs are refused.
        #expect(replica.ledger.outsideChangeRefusal == nil)
        replica.ledger.updateState { $0.value = 0 }
        await #expect {
            try await replica.replication.perform(LedgerAction.mix(1))
        } throws: { error in
            (error as? ReplicationError)?.code == .stopped
        }
    }

    @Test("what cannot be replicated is refused before connecting, naming the store or setting")
    func invalidSetups() async throws {
        func attempt(
            _ dispatcher: Dispatcher,
            _ stores: [any AnyStore],
            stream: String = "S",
            replicas: Int? = nil
        ) async -> ReplicationError? {
            var configuration = Replication.Configuration(servers: ["nats://127.0.0.1:1"], stream: stream)
            configuration.replicas = replicas
            do {
                _ = try await Replication(dispatcher: dispatcher, stores: stores, configuration: configuration)
                return nil
            } catch {
                return error
            }
        }
        let dispatcher = Dispatcher()
        let ledger = Store<Ledger, LedgerAction>(identifier: "ledger", reducer: LedgerReducer())
        let clicks = Store<Clicks, ClickAction>(identifier: "clicks", reducer: ClicksReducer())
        let unregistered = await attempt(dispatcher, [ledger])
        #expect(unregistered?.code == .invalidSetup && unregistered?.storeIdentifier == "ledger")
        #expect(unregistered?.message.contains("not registered") == true)
        try dispatcher.register(store: ledger)
        try dispatcher.register(store: clicks)
        let notCodable = await attempt(dispatcher, [clicks])
        #expect(notCodable?.message.contains("its state type Clicks is not Codable") == true)
        let badName = await attempt(dispatcher, [ledger], stream: "a.b")
        #expect(badName?.message.contains("The stream name 'a.b'") == true)
        let noReplicas = await attempt(dispatcher, [ledger], replicas: 0)
        #expect(noReplicas?.code == .invalidSetup && noReplicas?.message.contains("Replicas must be 1 or more") == true)
        dispatcher.dispatch(LedgerAction.mix(1), mode: .sync)
        let changed = await attempt(dispatcher, [ledger])
        #expect(changed?.message.contains("has applied 1 actions already") == true)
        let fresh = Dispatcher()
        let freshLedger = Store<Ledger, LedgerAction>(identifier: "ledger", reducer: LedgerReducer())
        try fresh.register(store: freshLedger)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let journal = try Journal(directory: directory.url.path, dispatcher: fresh)
        let journaled = await attempt(fresh, [freshLedger])
        #expect(journaled?.message.contains("keeps a journal in \(directory.url.path)") == true)
        try journal.close()
        // A store of a dispatcher with no journal, and no server: the error names the URL.
        let lone = Dispatcher()
        let loneLedger = Store<Ledger, LedgerAction>(identifier: "ledger", reducer: LedgerReducer())
        try lone.register(store: loneLedger)
        let unreachable = await attempt(lone, [loneLedger])
        #expect(unreachable?.code == .unavailable && unreachable?.natsError?.code == .noServer)
        #expect(unreachable?.message.contains("nats://127.0.0.1:1") == true)
        // A failed start leaves the store as it was: it takes changes from anywhere.
        #expect(loneLedger.outsideChangeRefusal == nil && lone.middleware.isEmpty)
    }

    @Test("lag: a replica held back says how far behind it is, as a property and as updates; caught up, none")
    func lag() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let writer = try await Replica.start(cluster.urls, stream: "LEDGER")
        let gate = Gate()
        let reader = try await Replica.start(cluster.urls, stream: "LEDGER") { applied in
            if applied.sequence == 5 { _ = gate.wait() }
        }
        let updates = reader.replication.lagUpdates()
        var iterator = updates.makeAsyncIterator()
        #expect(await iterator.next()?.behind == 0)
        for index in 1...20 {
            try await writer.replication.perform(LedgerAction.mix(UInt64(index)))
        }
        // The reader hears of message 20 while it is still applying message 5.
        var heard: Replication.Lag?
        while let lag = await iterator.next() {
            if lag.streamLastSequence == 20 {
                heard = lag
                break
            }
        }
        #expect(heard?.appliedSequence == 4 && heard?.behind == 16)
        #expect(reader.replication.lag.behind == 16 && reader.replication.lag.streamLastSequence == 20)
        gate.open()
        while let lag = await iterator.next(), lag.behind > 0 {}
        let caughtUp = reader.replication.lag
        #expect(caughtUp.behind == 0 && caughtUp.appliedSequence == 20 && caughtUp.sinceLastApplied >= .zero)
        #expect(writer.replication.lag.behind == 0 && writer.replication.lag.appliedSequence == 20)
        #expect(caughtUp.description.hasPrefix("0 messages behind (applied 20 of 20; the last "))
        await reader.replication.close()
        // The updates end with the replica.
        while await iterator.next() != nil {}
        await writer.replication.close()
    }

    @Test("a message that is not a record is skipped by every replica and reported; an unknown action stops them")
    func foreignMessages() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let first = try await Replica.start(cluster.urls, stream: "LEDGER")
        let connection = try await NATSConnection.connect(to: cluster.urls)
        // Appended by someone else: not JSON, then JSON that is no record.
        try await connection.publish(Data("hello".utf8), to: "dispatchstore.LEDGER", messageID: "other.1")
        try await connection.publish(Data("{\"a\":1}".utf8), to: "dispatchstore.LEDGER")
        let outcome = try await first.replication.perform(LedgerAction.mix(1))
        #expect(outcome.sequence == 3 && first.ledger.state.value == mixed([1]))
        let second = try await Replica.start(cluster.urls, stream: "LEDGER")
        #expect(second.replication.catchUp.caughtUp == 1 && converged(first, second))
        for replica in [first, second] {
            let skipped = replica.errors.current.filter { $0.code == .unreadableMessage }
            #expect(skipped.map(\.sequence) == [1, 2])
            #expect(skipped.first?.message.contains("Message 1 of stream LEDGER (id other.1) is not a record") == true)
            #expect(skipped.allSatisfy { $0.message.contains("every replica skips it") })
            #expect(replica.replication.failure == nil && replica.replication.lag.appliedSequence == 3)
        }
        // A record of an action type this program does not know: a newer program may apply it, so
        // every replica stops before it rather than skip it, and nothing of it is applied.
        try await connection.publish(
            try ActionLog.record(of: ForeignAction.launch, storeIdentifiers: ["ledger"], destination: "test"),
            to: "dispatchstore.LEDGER"
        )
        for replica in [first, second] {
            await #expect {
                try await replica.replication.waitUntilApplied(through: 4, timeout: .seconds(60))
            } throws: { error in
                guard let error = error as? ReplicationError else { return false }
                return error.code == .unreadableMessage && error.sequence == 4
                    && error.message.contains("Message 4 of stream LEDGER cannot be applied")
                    && error.message.contains("this replica stopped before it rather than skip it")
            }
            #expect(replica.replication.failure?.code == .unreadableMessage)
            #expect(replica.ledger.state.value == mixed([1]) && replica.replication.lag.appliedSequence == 3)
        }
        await connection.close()
        await first.replication.close()
        await second.replication.close()
    }

    @Test("a message delivered again (as after a reconnect) is applied once")
    func redeliveredOnce() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let writer = try await Replica.start(cluster.urls, stream: "LEDGER")
        let reader = try await Replica.start(cluster.urls, stream: "LEDGER")
        for index in 1...30 {
            try await writer.replication.perform(LedgerAction.mix(UInt64(index)))
        }
        try await reader.replication.waitUntilCaughtUp(timeout: .seconds(60))
        let before = reader.snapshot
        await reader.replication.applier.readAgain(from: 1)
        #expect(reader.replication.applier.counts.repeatsSkipped == 30 && reader.snapshot == before)
        try await writer.replication.perform(LedgerAction.mix(31))
        try await reader.replication.waitUntilCaughtUp(timeout: .seconds(60))
        #expect(reader.replication.applier.counts.repeatsSkipped == 30)
        #expect(reader.ledger.sequenceNumber == before.2 + 1 && converged(writer, reader))
        await writer.replication.close()
        await reader.replication.close()
    }

    @Test("no server at perform time: a clear error within the timeout, and nothing applied")
    func serverGone() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let replica = try await Replica.start(cluster.urls, stream: "LEDGER", timeout: .seconds(3))
        try await replica.replication.perform(LedgerAction.mix(1))
        cluster.servers[0].kill()
        let started = ContinuousClock.now
        await #expect {
            try await replica.replication.perform(LedgerAction.mix(2))
        } throws: { error in
            guard let error = error as? ReplicationError else { return false }
            return error.code == .timedOut && error.message.contains("was not acknowledged by stream LEDGER in time")
        }
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(replica.ledger.state.value == 1 && replica.ledger.sequenceNumber == 1)
        await replica.replication.close()
    }
}

/// The ledger's logic in an operation that finishes later, on another thread.
final class LaterLedgerReducer: Reducer<Ledger, LedgerAction> {
    override func operation(
        for action: LedgerAction,
        in store: Store<Ledger, LedgerAction>
    ) -> ActionOperation<Ledger, LedgerAction> {
        ActionOperation(action: action, store: store) { operation, action, store in
            Thread.detachNewThread {
                store.updateState { state in
                    if case .mix(let input) = action { state.value = (state.value &* 31) ^ input }
                    state.count += 1
                }
                operation.finish()
            }
        }
    }
}

/// An action no replicated store handles.
enum NotReplicated: ActionType, Codable {
    case one
}

/// An action no replica of these tests knows.
enum ForeignAction: ActionType, Codable, StablyNamed {
    case launch

    static let stableName = "Tests.ForeignAction"
}
