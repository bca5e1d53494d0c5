import DispatchStore
import Foundation
import TestSupport

@testable import DispatchStoreNATS

/// A non-commutative state: the same actions in another order give another value.
struct Ledger: StateType, Codable, Equatable {
    var value: UInt64 = 0
    var count = 0
    /// Makes the state large, for snapshots in chunks.
    var padding: [String] = []
}

enum LedgerAction: ActionType, Codable, Equatable {
    case mix(UInt64)
    case pad(String)
}

final class LedgerReducer: Reducer<Ledger, LedgerAction> {
    override func reduce(_ action: LedgerAction, into state: inout Ledger) {
        switch action {
        case .mix(let input): state.value = (state.value &* 31) ^ input
        case .pad(let text): state.padding.append(text)
        }
        state.count += 1
    }
}

/// The value a `Ledger` ends with after `inputs` mixed in this order.
func mixed(_ inputs: [UInt64]) -> UInt64 {
    inputs.reduce(0) { ($0 &* 31) ^ $1 }
}

/// A second replicated store, handling its own action type, that waits for the ledger.
struct Tally: StateType, Codable, Equatable {
    var notes: [String: Int] = [:]
}

enum TallyAction: ActionType, Codable, Equatable {
    case note(String)
}

final class TallyReducer: Reducer<Tally, TallyAction> {
    override func reduce(_ action: TallyAction, into state: inout Tally) {
        if case .note(let name) = action { state.notes[name, default: 0] += 1 }
    }
}

/// A store that is not replicated: local to each replica.
struct Clicks: StateType, Equatable {
    var count = 0
}

enum ClickAction: ActionType {
    case click
}

final class ClicksReducer: Reducer<Clicks, ClickAction> {
    override func reduce(_ action: ClickAction, into state: inout Clicks) {
        state.count += 1
    }
}

/// One replica: a dispatcher with a replicated ledger and tally and a local store.
struct Replica {
    let dispatcher: Dispatcher
    let ledger: Store<Ledger, LedgerAction>
    let tally: Store<Tally, TallyAction>
    let clicks: Store<Clicks, ClickAction>
    let replication: Replication
    let errors: Shared<[ReplicationError]>
    /// The ledger's state after each message applied, by sequence number.
    let history: Shared<[UInt64: Ledger]>

    /// Starts a replica of `stream` on `urls`.
    static func start(
        _ urls: [String],
        stream: String,
        name: String? = nil,
        snapshotEvery: Int? = nil,
        maximumMessages: Int64? = nil,
        replicas: Int? = nil,
        timeout: Duration = .seconds(30),
        startsFromSnapshot: Bool = true,
        connection: NATSConnection.Options = NATSConnection.Options(),
        onApply: (@Sendable (Replication.AppliedMessage) -> Void)? = nil
    ) async throws -> Replica {
        let dispatcher = Dispatcher()
        let ledger = Store<Ledger, LedgerAction>(identifier: "ledger", reducer: LedgerReducer())
        let tally = Store<Tally, TallyAction>(identifier: "tally", reducer: TallyReducer(), waitsFor: ["ledger"])
        let clicks = Store<Clicks, ClickAction>(identifier: "clicks", reducer: ClicksReducer())
        try dispatcher.register(store: ledger)
        try dispatcher.register(store: tally)
        try dispatcher.register(store: clicks)
        var configuration = Replication.Configuration(servers: urls, stream: stream)
        if let name { configuration.replicaName = name }
        configuration.snapshotEvery = snapshotEvery
        configuration.maximumMessages = maximumMessages
        configuration.replicas = replicas
        configuration.timeout = timeout
        configuration.connection = connection
        configuration.credentials = connection.credentials
        configuration.tls = connection.tls
        configuration.startsFromSnapshot = startsFromSnapshot
        let errors = Shared<[ReplicationError]>([])
        let history = Shared<[UInt64: Ledger]>([:])
        let replication = try await Replication(
            dispatcher: dispatcher,
            stores: [ledger, tally],
            configuration: configuration,
            onApply: { applied in
                // On the applier's thread, right after the message: the state it made.
                history.withLock { $0[applied.sequence] = ledger.state }
                onApply?(applied)
            },
            onError: { error in errors.append(error) }
        )
        return Replica(
            dispatcher: dispatcher,
            ledger: ledger,
            tally: tally,
            clicks: clicks,
            replication: replication,
            errors: errors,
            history: history
        )
    }

    /// The replicated states and the stores' sequence numbers.
    var snapshot: (Ledger, Tally, UInt64, UInt64) {
        (ledger.state, tally.state, ledger.sequenceNumber, tally.sequenceNumber)
    }
}

/// Whether two replicas hold the same replicated states with the same sequence numbers.
func converged(_ first: Replica, _ second: Replica) -> Bool {
    first.snapshot == second.snapshot
}
