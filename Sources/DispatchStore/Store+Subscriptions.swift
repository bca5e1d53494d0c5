extension Store {
    /// Adds a subscription.
    @usableFromInline
    func addObserver(_ entry: ObserverEntry) {
        guarded.withLockedValue { $0.observers = $0.observers.adding(entry) }
    }

    /// Adds a key-path subscription, joining the group of subscriptions to the same key path.
    ///
    /// - Parameters:
    ///   - id: The subscription's identifier.
    ///   - keyPath: The key path it watches.
    ///   - makeGroup: Creates the group from the current state, when no subscription watches the
    ///     key path yet. Called under the store's lock.
    ///   - makeCall: Creates the subscription's call for the group. Called under the store's lock.
    @usableFromInline
    func addKeyPathObserver(
        id: UInt64,
        keyPath: AnyKeyPath,
        makeGroup: (State) -> KeyPathGroup,
        makeCall: (KeyPathGroup) -> ObserverEntry.Call
    ) {
        guarded.withLockedValue { bookkeeping in
            let group = bookkeeping.observers.group(for: keyPath) ?? makeGroup(storage.pointee)
            let entry = ObserverEntry(id: id, object: nil, group: group, call: makeCall(group))
            bookkeeping.observers = bookkeeping.observers.adding(entry)
        }
    }

    /// Ends a subscription (and forgets how to end it, for a state stream).
    @usableFromInline
    func removeSubscription(id: UInt64) {
        guarded.withLockedValue { bookkeeping in
            if let smaller = bookkeeping.observers.removing(where: { $0.id == id }) {
                bookkeeping.observers = smaller
            }
            bookkeeping.streamEnds[id] = nil
        }
    }

    /// Adds a state stream's subscription: `makeEntry` gets the current state and how many changes
    /// are queued but not delivered yet (which the subscription must skip: they were committed
    /// before it), all read at one instant with the subscription's start.
    ///
    /// - Parameters:
    ///   - id: The subscription's identifier.
    ///   - end: Ends the stream; called when the store is unregistered or released.
    ///   - makeEntry: Creates the subscription. Called under the store's lock.
    func addStream(
        id: UInt64,
        end: @escaping @Sendable () -> Void,
        makeEntry: (_ current: State, _ queued: Int) -> ObserverEntry
    ) {
        guarded.withLockedValue { bookkeeping in
            bookkeeping.observers = bookkeeping.observers.adding(makeEntry(storage.pointee, pendingChanges.count))
            bookkeeping.streamEnds[id] = end
        }
    }

    /// Ends every state stream (the store was unregistered).
    func endStateStreams() {
        let ends = guarded.withLockedValue { bookkeeping in
            defer { bookkeeping.streamEnds = [:] }
            return bookkeeping.streamEnds
        }
        for end in ends.values {
            end()
        }
    }

    /// Ends the subscriptions bound to `object`, and those whose object was released.
    func removeObservers(boundTo object: AnyObject) {
        guarded.withLockedValue { bookkeeping in
            let bound = { (entry: ObserverEntry) in
                entry.isBoundToObject && (entry.object == nil || entry.object === object)
            }
            if let smaller = bookkeeping.observers.removing(where: bound) { bookkeeping.observers = smaller }
        }
    }
}
