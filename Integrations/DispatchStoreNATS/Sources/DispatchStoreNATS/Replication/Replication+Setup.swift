@_spi(DispatchStoreNATS) import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

/// A store's sequence number, read without its generic types.
protocol SequenceNumbered {
    var sequenceNumber: UInt64 { get }
}

extension Store: SequenceNumbered {}

extension Replication {
    /// The stores and configuration of a replication, checked before anything is connected.
    struct Setup {
        let stores: [any AnyStore]
        let identifiers: [String]
        /// The replicated stores of each replicated action type, by the type.
        let storesByActionType: [ObjectIdentifier: [String]]
        let decoder: ActionLog.RecordDecoder

        /// Checks `stores` and `configuration`.
        ///
        /// - Throws: ``ReplicationError/Code/invalidSetup`` naming the store or setting.
        init(dispatcher: Dispatcher, stores: [any AnyStore], configuration: Configuration) throws(ReplicationError) {
            let stream = configuration.stream
            func invalid(_ message: String, store: String? = nil) -> ReplicationError {
                ReplicationError(.invalidSetup, stream: stream, storeIdentifier: store, message: message)
            }
            let name = /[A-Za-z0-9_-]+/
            guard (try? name.wholeMatch(in: stream)) != nil else {
                throw invalid("the stream name '\(stream)' must be letters, digits, '-' and '_'")
            }
            guard (try? name.wholeMatch(in: configuration.replicaName)) != nil else {
                throw invalid("the replica name '\(configuration.replicaName)' must be letters, digits, '-' and '_'")
            }
            guard (try? name.wholeMatch(in: configuration.snapshotBucket)) != nil else {
                throw invalid("the bucket name '\(configuration.snapshotBucket)' must be letters, digits, '-' and '_'")
            }
            guard !configuration.servers.isEmpty else { throw invalid("no NATS server URL was given") }
            if let every = configuration.snapshotEvery, every < 1 {
                throw invalid("snapshotEvery must be 1 or more (or nil for no snapshots), not \(every)")
            }
            if let replicas = configuration.replicas, replicas < 1 {
                throw invalid(
                    "replicas must be 1 or more (or nil for as many as the cluster has, up to 3), not \(replicas)"
                )
            }
            guard !stores.isEmpty else { throw invalid("no store was given to replicate through stream \(stream)") }
            if let journal = dispatcher.middleware.first(where: { $0 is Journal }) as? Journal {
                throw invalid(
                    "the dispatcher keeps a journal in \(journal.directory), whose recovery would change the stores "
                        + "outside the stream; the stream and its snapshots are the replicated stores' durable state"
                )
            }
            var identifiers: [String] = []
            var byType: [ObjectIdentifier: [String]] = [:]
            var actionTypes: [ObjectIdentifier: any (ActionType & Decodable).Type] = [:]
            for store in stores {
                let identifier = store.identifier
                guard dispatcher.store(with: identifier) === store else {
                    throw invalid("store '\(identifier)' is not registered with the dispatcher", store: identifier)
                }
                guard !identifiers.contains(identifier) else {
                    throw invalid("store '\(identifier)' is given twice", store: identifier)
                }
                guard store.stateType is any (StateType & Codable).Type else {
                    throw invalid(
                        "store '\(identifier)' cannot be replicated: its state type \(store.stateType) is not Codable",
                        store: identifier
                    )
                }
                guard let actionType = store.actionType as? any (ActionType & Codable).Type else {
                    throw invalid(
                        "store '\(identifier)' cannot be replicated: its action type \(store.actionType) is not Codable",
                        store: identifier
                    )
                }
                if let reason = store.outsideChangeRefusal {
                    throw invalid(
                        "store '\(identifier)' already refuses outside changes (\(reason)); replicate a store once",
                        store: identifier
                    )
                }
                if let numbered = store as? any SequenceNumbered, numbered.sequenceNumber != 0 {
                    throw invalid(
                        "store '\(identifier)' has applied \(numbered.sequenceNumber) actions already, which the stream "
                            + "does not hold; start the replication before dispatching to it",
                        store: identifier
                    )
                }
                identifiers.append(identifier)
                byType[ObjectIdentifier(actionType), default: []].append(identifier)
                actionTypes[ObjectIdentifier(actionType)] = actionType
            }
            do {
                decoder = try ActionLog.RecordDecoder(
                    actionTypes: Array(actionTypes.values),
                    source: "stream \(stream)"
                )
            } catch {
                throw invalid(error.message)
            }
            self.stores = stores
            self.identifiers = identifiers
            storesByActionType = byType
        }
    }
}
