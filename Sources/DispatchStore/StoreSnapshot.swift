/// One store's state at a recorded instant.
public struct StoreSnapshot: Sendable {
    /// The store's identifier.
    public let storeIdentifier: String
    /// Its state then.
    public let state: any StateType
    /// Its ``Store/sequenceNumber`` then: how many actions had made that state.
    public let sequenceNumber: UInt64

    init(storeIdentifier: String, state: any StateType, sequenceNumber: UInt64) {
        self.storeIdentifier = storeIdentifier
        self.state = state
        self.sequenceNumber = sequenceNumber
    }
}
