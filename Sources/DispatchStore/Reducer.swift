/// The business logic of a store: applies each action to the state, at once or through an operation.
///
/// Subclass it and override one of two methods:
///
/// - ``reduce(_:into:)`` for synchronous changes. This is the fast path: the dispatcher runs it
///   right away under the store's lock, without creating an `Operation`.
/// - ``operation(for:in:)`` when an action needs asynchronous work, cancellation or operation
///   dependencies: return a new `ActionOperation` that calls `finish()` when done, or `nil` (what
///   the default implementation returns) to have the action applied through ``reduce(_:into:)``.
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

    /// Returns the operation that handles `action` for `store`, or `nil` to apply
    /// ``reduce(_:into:)``.
    ///
    /// The dispatcher calls this when the store's turn comes in a transaction, on the thread that
    /// runs it. When it returns an operation, the dispatcher starts it at once (after the operations
    /// of the stores it waits for finished); return a new operation for every call. When it returns
    /// `nil`, the dispatcher calls ``reduce(_:into:)`` at once, under the store's lock.
    ///
    /// The default implementation returns `nil`. An override may return an operation for some
    /// actions and `super.operation(for:in:)` (or `nil`) for the others, which ``reduce(_:into:)``
    /// then handles. An override may also declare a non-optional return type when it always returns
    /// an operation.
    ///
    /// - Parameters:
    ///   - action: The dispatched action.
    ///   - store: The store being updated.
    /// - Returns: The operation that changes the store's state and finishes, or `nil`.
    open func operation(for action: Action, in store: Store<State, Action>) -> ActionOperation<State, Action>? {
        nil
    }

    /// Changes `state` for `action`, synchronously.
    ///
    /// The dispatcher calls it under the store's lock when ``operation(for:in:)`` returns `nil`:
    /// keep it quick and pure; do not read or update the same store from here, and do not dispatch
    /// `.sync` to it. The default implementation does nothing.
    ///
    /// - Parameters:
    ///   - action: The dispatched action.
    ///   - state: The store's state, to change in place.
    open func reduce(_ action: Action, into state: inout State) {}
}
