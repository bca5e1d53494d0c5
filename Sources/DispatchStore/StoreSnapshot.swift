/// One store's state at a recorded instant.
public struct StoreSnapshot: Sendable {
    /// The store's identifier.
    public let storeIdentifier: String
    /// Its state then.
    public let state: any StateType
}
