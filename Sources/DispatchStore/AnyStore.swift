/// A store seen without its generic types: what middleware and `Dispatcher.store(with:)` hand out.
///
/// Every `Store` conforms. Cast back to the concrete type to read its typed state:
///
/// ```swift
/// let counter = dispatcher.store(with: "counter") as? Store<Counter, CounterAction>
/// ```
public protocol AnyStore: AnyObject, Sendable {
    /// The identifier the store is registered under.
    var identifier: String { get }
    /// The identifiers of the stores whose operations must finish before this store's, for the same action.
    var waitsFor: [String] { get }
    /// A snapshot of the current state, read under the store's lock.
    var anyState: any StateType { get }
    /// The type of the store's state.
    var stateType: any StateType.Type { get }
    /// The type of action the store handles.
    var actionType: any ActionType.Type { get }
}
