import DispatchStore

/// A store seen by the inspector: its state and sequence number, read together.
protocol InspectedStore: AnyStore {
    /// The state and the sequence number at one instant, read under the store's lock; `nil` when
    /// the calling thread holds that lock (from inside the store's `updateState` or `reduce`).
    func inspectedState() -> (state: any StateType, sequenceNumber: UInt64)?
}

extension Store: InspectedStore {
    func inspectedState() -> (state: any StateType, sequenceNumber: UInt64)? {
        guard lockStateUnlessHeld() else { return nil }
        defer { guarded.unlock() }
        return (storage.pointee, withBookkeepingLocked { $0.sequenceNumber })
    }
}

extension AnyStore {
    /// The state and the sequence number read together, or the state alone for a store of
    /// another kind (its sequence number then 0).
    var stateAndSequenceNumber: (state: any StateType, sequenceNumber: UInt64)? {
        if let store = self as? any InspectedStore { return store.inspectedState() }
        return (anyState, 0)
    }
}
