// A stand-in with the shape of ReSwift's core API (Store, Action, Reducer, StoreSubscriber), so that
// the ReSwift side of Docs/ComingFromReSwift.md compiles and runs without depending on ReSwift:
// Docs/guides.py builds it as the module `ReSwift` for the guide's `import ReSwift`. It behaves like
// ReSwift for that program: synchronous dispatch, subscribers told of every new state.

/// A ReSwift action: any value describing a change.
public protocol Action {}

/// ReSwift's reducer: the new state from an action and the current state (`nil` at first).
public typealias Reducer<State> = (_ action: any Action, _ state: State?) -> State

/// An object that receives every new state of a store it subscribed to.
public protocol StoreSubscriber: AnyObject {
    /// The state type it receives.
    associatedtype StoreSubscriberStateType

    /// Receives the store's new state.
    func newState(state: StoreSubscriberStateType)
}

/// ReSwift's single store.
public final class Store<State> {
    private let reducer: Reducer<State>
    private var subscribers: [(object: AnyObject, call: (State) -> Void)] = []

    /// The current state.
    public private(set) var state: State

    /// Creates the store; the reducer receives an initialisation action when `state` is `nil`.
    public init(reducer: @escaping Reducer<State>, state: State?) {
        self.reducer = reducer
        self.state = state ?? reducer(InitialAction(), nil)
    }

    /// Reduces `action` into a new state and tells the subscribers.
    public func dispatch(_ action: any Action) {
        state = reducer(action, state)
        for subscriber in subscribers {
            subscriber.call(state)
        }
    }

    /// Adds a subscriber, which receives the current state at once.
    public func subscribe<Subscriber: StoreSubscriber>(_ subscriber: Subscriber)
    where Subscriber.StoreSubscriberStateType == State {
        subscribers.append((subscriber, { [weak subscriber] in subscriber?.newState(state: $0) }))
        subscriber.newState(state: state)
    }

    /// Removes a subscriber.
    public func unsubscribe(_ subscriber: AnyObject) {
        subscribers.removeAll { $0.object === subscriber }
    }
}

/// The action a store without an initial state reduces first.
struct InitialAction: Action {}
