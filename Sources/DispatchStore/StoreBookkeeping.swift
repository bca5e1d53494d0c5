/// What a store keeps besides its state, behind the store's lock.
///
/// Not generic, so that the engine's unspecialised paths reach it without looking up metadata at
/// run time. The state itself, which is generic, and the changes waiting for delivery are guarded
/// by the same lock but kept in the store (see `Store.storage`).
package struct StoreBookkeeping {
    /// How many of the store's operations have started and not finished.
    var operationsInFlight = 0
    /// The sequence number of the last action the store applied; 0 before the first.
    package var sequenceNumber: UInt64 = 0
    /// How many queued changes a delivery took so far, and how many of those all the observers
    /// were called with (the one being delivered is not).
    var takenChanges: UInt64 = 0
    var deliveredChanges: UInt64 = 0
    /// How many threads wait for another thread to deliver this store's changes.
    var deliveryWaiters = 0
    /// The subscriptions.
    var observers = ObserverRegistry()
    /// The dispatcher the store is registered with.
    var owner: ObjectIdentifier?
    /// Why the store refuses changes made outside its actions, when it does
    /// (`AnyStore.outsideChangeRefusal`).
    var outsideChangeRefusal: String?
    /// Ends the state streams (`states(bufferingNewest:)`), by subscription id.
    var streamEnds: [UInt64: @Sendable () -> Void] = [:]
}
