/// The business logic of a store: turns each action into the operation that changes the state.
///
/// Subclass it and override one of two methods:
///
/// - ``reduce(_:into:)`` for synchronous changes. This is the fast path: the dispatcher may run it
///   right away under the store's lock, without creating an `Operation`.
/// - ``operation(for:in:)`` when an action needs asynchronous work, cancellation or operation
///   dependencies: return a new `ActionOperation` that calls `finish()` when done. Its default
///   implementation wraps ``reduce(_:into:)``, so an override may return
///   `super.operation(for:in:)` for the actions it does not treat specially.
///
/// ```swift
/// final class CounterReducer: Reducer<Counter, CounterAction> {
///     override func reduce(_ action: CounterAction, into state: inout Counter) {
///         switch action {
///         case .increase: state.count += 1
///         case .add(let amount): state.count += amount
///         }
///     }
/// }
/// ```
///
/// - Note: Not `Sendable` itself, so subclasses need no annotation: the store that owns the reducer
///   carries the thread-safety guarantee. The dispatcher calls a reducer from several threads at
///   once, so a reducer must not keep unsynchronised mutable state; keep state in the store.
open class Reducer<State: StateType, Action: ActionType> {
    /// Creates a reducer.
    public init() {}

    /// Returns the operation that handles `action` for `store`.
    ///
    /// The dispatcher calls this when the store's turn comes in a transaction, on the thread that
    /// runs it, and starts the returned operation at once (after the operations of the stores it
    /// waits for finished). Return a new operation for every call.
    ///
    /// The default implementation applies ``reduce(_:into:)``. When the dispatcher is the caller, it
    /// reduces at once under the store's lock and returns a shared operation that has already
    /// finished, so configuring the returned operation (dependencies, completion block) has no
    /// effect; otherwise it returns a new operation that reduces when started.
    ///
    /// - Parameters:
    ///   - action: The dispatched action.
    ///   - store: The store being updated.
    /// - Returns: The operation that changes the store's state and finishes.
    open func operation(for action: Action, in store: Store<State, Action>) -> ActionOperation<State, Action> {
        if let reduced = store.reduceInline(action, with: self) {
            return reduced
        }
        return ActionOperation(action: action, store: store) { operation, action, store in
            store.updateState { state in self.reduce(action, into: &state) }
            operation.finish()
        }
    }

    /// Changes `state` for `action`, synchronously.
    ///
    /// Runs under the store's lock: keep it quick and pure; do not read or update the same store from
    /// here, and do not dispatch `.sync` to it. The default implementation does nothing.
    ///
    /// - Parameters:
    ///   - action: The dispatched action.
    ///   - state: The store's state, to change in place.
    open func reduce(_ action: Action, into state: inout State) {}
}
