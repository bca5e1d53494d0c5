/// Where a store's observer delivery stands, so that a delivery nested inside an observer callback
/// (a re-entrant dispatch) continues exactly where the outer one is, keeping every observer's calls
/// in commit order.
///
/// Touched only under the store's recursive delivery lock.
final class DeliveryCursor<State, Action> {
    /// The change being delivered, if any.
    var change: StateChange<State, Action>?
    /// The observers snapshot taken when `change` was dequeued.
    var set = ObserverSet<State, Action>()
    /// The next whole-state observer to call.
    var observerIndex = 0
    /// The key-path subscriptions whose value changed with `change`.
    var changedKeyPaths: [any KeyPathSubscribers<State>] = []
    /// The next changed key-path subscription, and the next callback in it.
    var keyPathIndex = 0
    var callbackIndex = 0
    /// Incremented whenever a new change starts, so a loop can tell that a nested delivery moved on.
    var generation: UInt64 = 0
    /// Whether an observer bound to a released object was skipped (and should be removed).
    var sawReleasedObserver = false

    func start(_ change: StateChange<State, Action>, observers: ObserverSet<State, Action>) {
        self.change = change
        set = observers
        observerIndex = 0
        keyPathIndex = 0
        callbackIndex = 0
        generation &+= 1
        changedKeyPaths =
            observers.keyPaths.isEmpty ? [] : observers.keyPaths.filter { $0.valueChanged(in: change.state) }
    }
}
