extension Store {
    /// Calls `callback` after every change of the state, for as long as `observer` is alive.
    ///
    /// The callback receives the state right after the change and the action whose operation made
    /// it, or `nil` for a recorder restore or an ``updateState(_:)`` made outside any operation. It is
    /// called once per finished operation of this store, after the state is committed, outside the
    /// store's lock, one change at a time and in commit order.
    ///
    /// The store holds `observer` weakly: the observation ends when the object is released (so a
    /// callback capturing `[weak self]` cannot leak it), or when you call ``unregister(observer:)`` or
    /// cancel the returned token. One object may register several callbacks.
    ///
    /// Every callback of one change is passed the same committed state and action, lent rather than
    /// copied: a call retains none of the state's arrays, strings or dictionaries, however many
    /// observers there are. (Keeping the state beyond the call copies it, as keeping any value does.)
    ///
    /// ```swift
    /// store.register(observer: self) { state, action in
    ///     print("count is now", state.count, "after", action.map { "\($0)" } ?? "a restore")
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - observer: The object whose lifetime bounds the observation.
    ///   - callback: Called with the new state and the action that produced it.
    /// - Returns: A token that ends the observation early; keeping it is optional.
    /// - Note: The callback runs on the thread that delivers the change: the dispatching thread for
    ///   `.sync`, the main queue for `.mainThread`, a dispatcher queue otherwise. Safe to call from
    ///   any thread, including from inside a callback.
    @discardableResult
    @inlinable
    public func register(
        observer: AnyObject,
        callback: @escaping @Sendable (_ state: State, _ action: Action?) -> Void
    ) -> ObserverToken {
        let id = nextSubscriptionID()
        addObserver(ObserverEntry(id: id, object: observer, group: nil, call: Self.makeCall(callback)))
        return ObserverToken(Cancellation { [weak self] in self?.removeSubscription(id: id) })
    }

    /// Ends every observation registered for `observer` with ``register(observer:callback:)``.
    ///
    /// - Parameter observer: The object passed when registering.
    /// - Note: Safe from any thread. A delivery already running on another thread may still call the
    ///   callback once; none starts after this returns.
    public func unregister(observer: AnyObject) {
        removeObservers(boundTo: observer)
    }

    /// Calls `callback` after every change of the state, for as long as you keep the subscription.
    ///
    /// The same calls as ``register(observer:callback:)``, owned by a token instead of an object:
    /// the subscription ends when the returned ``Subscription`` is released or cancelled. This is the
    /// cheapest way to observe a store (no weak reference to check per change).
    ///
    /// ```swift
    /// let subscription = store.subscribe { state, _ in render(state) }
    /// ```
    ///
    /// - Parameter callback: Called with the new state and the action that produced it (`nil` for a
    ///   restore or an update outside any operation).
    /// - Returns: The subscription; keep it for as long as you want the calls.
    /// - Note: Called on the thread that delivers the change, one change at a time, in commit order.
    /// - Complexity: Amortized O(1) to subscribe and to cancel, whatever the number of subscriptions;
    ///   the first delivery after a change of the subscriptions rebuilds their list, in O(*n*).
    @inlinable
    public func subscribe(_ callback: @escaping @Sendable (_ state: State, _ action: Action?) -> Void) -> Subscription {
        let id = nextSubscriptionID()
        addObserver(ObserverEntry(id: id, object: nil, group: nil, call: Self.makeCall(callback)))
        return Subscription(Cancellation { [weak self] in self?.removeSubscription(id: id) })
    }

    /// Calls `callback` with the value at `keyPath` each time a change of the state changes it.
    ///
    /// The value is compared with the last one delivered to subscribers of the same key path (which
    /// share one comparison per change), starting from its value when you subscribe; the callback
    /// runs only when it differs. The subscription ends when the returned ``Subscription`` is
    /// released or cancelled.
    ///
    /// ```swift
    /// let subscription = store.subscribe(\.count) { count in label.text = "\(count)" }
    /// ```
    ///
    /// - Parameters:
    ///   - keyPath: The part of the state to watch.
    ///   - callback: Called with the new value.
    /// - Returns: The subscription; keep it for as long as you want the calls.
    /// - Note: Called on the thread that delivers the change, one change at a time, in commit order.
    /// - Complexity: Amortized O(1) to subscribe and to cancel; a change costs one comparison per key
    ///   path watched, however many subscriptions share it, plus one call per subscription whose
    ///   value changed.
    @inlinable
    public func subscribe<Value: Equatable & Sendable>(
        _ keyPath: any KeyPath<State, Value> & Sendable,
        _ callback: @escaping @Sendable (Value) -> Void
    ) -> Subscription {
        let id = nextSubscriptionID()
        addKeyPathObserver(
            id: id,
            keyPath: keyPath,
            makeGroup: { state in
                let values = KeyPathValues(state[keyPath: keyPath])
                return KeyPathGroup(keyPath: keyPath, values: values) { change in
                    let value = Self.lent(change).state[keyPath: keyPath]
                    guard value != values.last.pointee else { return false }
                    values.last.pointee = value
                    values.current.pointee = value
                    return true
                }
            },
            makeCall: { group in
                // Groups are keyed by key path, and a key path fixes the value type.
                let values = unsafeDowncast(group.values, to: KeyPathValues<Value>.self)
                return { _ in callback(values.current.pointee) }
            }
        )
        return Subscription(Cancellation { [weak self] in self?.removeSubscription(id: id) })
    }

    /// Wraps a typed callback into the untyped call the delivery loop makes.
    ///
    /// Inlinable so that the caller's module specialises it: reading the change then needs no
    /// runtime metadata lookup.
    @inlinable
    static func makeCall(_ callback: @escaping @Sendable (State, Action?) -> Void) -> ObserverEntry.Call {
        { change in
            let change = lent(change)
            if change.hasAction {
                // Only an `ActionChange` has an action.
                callback(change.state, unsafeDowncast(change, to: ActionChange<State, Action>.self).action)
            } else {
                callback(change.state, nil)
            }
        }
    }

    /// The change an observer call or a key-path group receives: one of this store's.
    ///
    /// The delivery holds it during the call; its constants are lent to the callback, not copied.
    @inlinable
    static func lent(_ change: AnyObject) -> Change<State, Action> {
        // Only this store's deliveries make the calls, with this store's changes.
        unsafeDowncast(change, to: Change<State, Action>.self)
    }
}
