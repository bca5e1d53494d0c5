/// An action: a small value describing a change, routed by its type to the stores that handle it.
///
/// A store handles exactly one action type (its `Action`), and `Dispatcher.dispatch(_:to:mode:timeout:then:)`
/// sends an action to every registered store whose `Action` is the action's type.
///
/// ```swift
/// enum CounterAction: ActionType {
///     case increase
///     case add(Int)
/// }
/// ```
public protocol ActionType: Sendable {}
