/// One whole-state observer.
struct StateObserver<State, Action> {
    let id: UInt64
    /// The object whose lifetime bounds the subscription, for `register(observer:callback:)`.
    weak var object: AnyObject?
    /// Whether `object` was given: such an observer ends when the object is released.
    let isBoundToObject: Bool
    let callback: @Sendable (State, Action?) -> Void
}

/// The subscriptions to one key path of the state: callbacks called only when the value changes.
protocol KeyPathSubscribers<State>: AnyObject {
    associatedtype State
    var keyPath: AnyKeyPath { get }
    var count: Int { get }
    func removing(id: UInt64) -> (any KeyPathSubscribers<State>)?
    /// Compares the value in `state` with the last one delivered; records it and returns `true` when
    /// it changed. Called only under the store's delivery lock.
    func valueChanged(in state: State) -> Bool
    /// Calls callback `index` with the value recorded by the last `valueChanged(in:)` that returned `true`.
    func deliver(at index: Int)
}

/// The last value delivered for one key path; touched only under the store's delivery lock.
final class DeliveredValue<Value> {
    var last: Value
    var current: Value

    init(_ value: Value) {
        last = value
        current = value
    }
}

final class KeyPathSubscription<State, Value: Equatable>: KeyPathSubscribers {
    let path: KeyPath<State, Value>
    let delivered: DeliveredValue<Value>
    let callbacks: [(id: UInt64, callback: @Sendable (Value) -> Void)]

    init(
        path: KeyPath<State, Value>,
        delivered: DeliveredValue<Value>,
        callbacks: [(id: UInt64, callback: @Sendable (Value) -> Void)]
    ) {
        self.path = path
        self.delivered = delivered
        self.callbacks = callbacks
    }

    var keyPath: AnyKeyPath {
        path
    }

    var count: Int {
        callbacks.count
    }

    func adding(id: UInt64, callback: @escaping @Sendable (Value) -> Void) -> KeyPathSubscription {
        KeyPathSubscription(path: path, delivered: delivered, callbacks: callbacks + [(id, callback)])
    }

    func removing(id: UInt64) -> (any KeyPathSubscribers<State>)? {
        let remaining = callbacks.filter { $0.id != id }
        return remaining.isEmpty ? nil : KeyPathSubscription(path: path, delivered: delivered, callbacks: remaining)
    }

    func valueChanged(in state: State) -> Bool {
        let value = state[keyPath: path]
        if value == delivered.last { return false }
        delivered.last = value
        delivered.current = value
        return true
    }

    func deliver(at index: Int) {
        callbacks[index].callback(delivered.current)
    }
}

/// An immutable snapshot of a store's observers, replaced whenever one is added or removed.
final class ObserverSet<State, Action> {
    let observers: [StateObserver<State, Action>]
    let keyPaths: [any KeyPathSubscribers<State>]
    let isEmpty: Bool

    init(observers: [StateObserver<State, Action>] = [], keyPaths: [any KeyPathSubscribers<State>] = []) {
        self.observers = observers
        self.keyPaths = keyPaths
        self.isEmpty = observers.isEmpty && keyPaths.isEmpty
    }

    func adding(_ observer: StateObserver<State, Action>) -> ObserverSet {
        ObserverSet(observers: observers + [observer], keyPaths: keyPaths)
    }

    func replacingKeyPaths(_ keyPaths: [any KeyPathSubscribers<State>]) -> ObserverSet {
        ObserverSet(observers: observers, keyPaths: keyPaths)
    }

    /// The set without the observers matching `shouldRemove`, or `nil` when none matched.
    func removingObservers(where shouldRemove: (StateObserver<State, Action>) -> Bool) -> ObserverSet? {
        let remaining = observers.filter { !shouldRemove($0) }
        return remaining.count == observers.count ? nil : ObserverSet(observers: remaining, keyPaths: keyPaths)
    }

    /// The set without subscription `id`, or `nil` when it holds no such subscription.
    func removing(id: UInt64) -> ObserverSet? {
        if let set = removingObservers(where: { $0.id == id }) { return set }
        for (index, group) in keyPaths.enumerated() where group.count > 0 {
            guard let smaller = group.removing(id: id) else {
                var groups = keyPaths
                groups.remove(at: index)
                return replacingKeyPaths(groups)
            }
            if smaller.count != group.count {
                var groups = keyPaths
                groups[index] = smaller
                return replacingKeyPaths(groups)
            }
        }
        return nil
    }
}
