// A stand-in with the shape of the original Dispatch's API (the library DispatchStore replaces), so
// that its side of Docs/ComingFromReSwift.md compiles and runs: Docs/guides.py builds it as the
// module `OriginalDispatch` for the guide's `import OriginalDispatch`. It is synchronous and minimal:
// just enough to run that program, none of the original's queues (or bugs).

public import Foundation

/// A store's state: a type with an empty initialiser.
public protocol StateType {
    /// The initial state.
    init()
}

/// An action a store's reducer handles.
public protocol ActionType {}

/// The type-erased store the dispatcher keeps.
public protocol AnyStore: AnyObject {
    /// The store's identifier.
    var identifier: String { get }
}

/// A store: the state of one domain and the reducer that changes it.
public final class Store<S: StateType, A: ActionType>: AnyStore {
    /// The store's identifier.
    public let identifier: String
    /// The current state.
    public private(set) var state = S()
    let reducer: Reducer<S, A>
    private var observers: [(object: AnyObject, callback: (S, A?) -> Void)] = []

    /// Creates a store.
    public init(identifier: String, reducer: Reducer<S, A>) {
        self.identifier = identifier
        self.reducer = reducer
    }

    /// Changes the state.
    public func updateState(closure: (inout S) -> Void) {
        closure(&state)
    }

    /// Calls `callback` after every change.
    public func register(observer: AnyObject, callback: @escaping (S, A?) -> Void) {
        observers.append((observer, callback))
    }

    func notify(_ action: A) {
        for observer in observers {
            observer.callback(state, action)
        }
    }
}

/// The subclassable reducer: returns an operation per action.
open class Reducer<S: StateType, A: ActionType> {
    /// Creates a reducer.
    public init() {}

    /// The operation that applies `action` to `store`.
    open func operation(for action: A, in store: Store<S, A>) -> ActionOperation<S, A> {
        ActionOperation(action: action, store: store) { operation, _, _ in operation.finish() }
    }
}

/// The operation a reducer returns.
public final class ActionOperation<S: StateType, A: ActionType>: Operation, @unchecked Sendable {
    // @unchecked: Operation subclasses must restate it; this stand-in runs on one thread.
    private let action: A
    private let store: Store<S, A>
    private let block: (ActionOperation<S, A>, A, Store<S, A>) -> Void

    /// Creates the operation.
    public init(
        action: A,
        store: Store<S, A>,
        block: @escaping (ActionOperation<S, A>, A, Store<S, A>) -> Void
    ) {
        self.action = action
        self.store = store
        self.block = block
    }

    /// Runs the block.
    public override func main() {
        block(self, action, store)
    }

    /// Marks the work done.
    public func finish() {}
}

/// The dispatch modes.
public enum DispatchMode {
    /// Concurrently.
    case async
    /// On the calling thread.
    case sync
    /// One after the other.
    case serial
    /// On the main thread.
    case mainThread
}

/// The dispatcher: routes actions to the stores that handle them.
public final class Dispatcher {
    /// The shared dispatcher.
    nonisolated(unsafe) public static let `default` = Dispatcher()
    private var stores: [any AnyStore] = []
    private var routes: [(AnyObject, (Any) -> Void)] = []

    /// Creates a dispatcher.
    public init() {}

    /// Registers a store.
    public func register<S, A>(store: Store<S, A>) {
        stores.append(store)
        routes.append(
            (
                store,
                { action in
                    guard let action = action as? A else { return }
                    store.reducer.operation(for: action, in: store).start()
                    store.notify(action)
                }
            )
        )
    }

    /// The store registered under `identifier`.
    public func store(with identifier: String) -> (any AnyStore)? {
        stores.first { $0.identifier == identifier }
    }

    /// Dispatches an action to the stores that handle it.
    public func dispatch(_ action: any ActionType, mode: DispatchMode = .async, then: (() -> Void)? = nil) {
        for route in routes {
            route.1(action)
        }
        then?()
    }
}
