public import DispatchStore
import Foundation

/// What replay and the journal need from a store beyond ``DispatchStore/AnyStore``, without its generic types.
protocol JournaledStore: AnyStore {
    /// The state and the sequence number, read together under the store's lock.
    func stateAndSequenceNumber() -> (state: any StateType, sequenceNumber: UInt64)
    /// Sets the state and the sequence number together; observers hear of it with a `nil` action.
    ///
    /// - Returns: `false`, changing nothing, when `state` is not of the store's state type.
    func restore(anyState state: any StateType, sequenceNumber: UInt64) -> Bool
    /// The state decoded from `data` (JSON) as the store's state type.
    ///
    /// - Throws: What `JSONDecoder` throws, or a `DecodingError` when the state type is not `Decodable`.
    func decodeState(from data: Data) throws -> any StateType
}

extension Store: JournaledStore {
    func stateAndSequenceNumber() -> (state: any StateType, sequenceNumber: UInt64) {
        lockState(for: "read its state")
        defer { guarded.unlock() }
        return (storage.pointee, withBookkeepingLocked { $0.sequenceNumber })
    }

    func restore(anyState state: any StateType, sequenceNumber: UInt64) -> Bool {
        guard let typed = state as? State else { return false }
        restore(state: typed, sequenceNumber: sequenceNumber)
        return true
    }

    func decodeState(from data: Data) throws -> any StateType {
        guard let type = State.self as? any (StateType & Decodable).Type else {
            throw DecodingError.typeMismatch(
                State.self,
                DecodingError.Context(codingPath: [], debugDescription: "\(State.self) is not Decodable")
            )
        }
        return try JSONDecoder().decode(type, from: data)
    }
}

extension AnyStore {
    /// The digest of the state now (``StateDigest``) with the sequence number it is at, or `nil`
    /// when the state is not `Encodable`.
    var stateDigest: ActionRecord.Check? {
        guard let store = self as? any JournaledStore else { return nil }
        let (state, sequenceNumber) = store.stateAndSequenceNumber()
        guard let encodable = state as? any Encodable, let digest = StateDigest.digest(of: encodable) else {
            return nil
        }
        return ActionRecord.Check(storeIdentifier: identifier, sequenceNumber: sequenceNumber, digest: digest)
    }
}
