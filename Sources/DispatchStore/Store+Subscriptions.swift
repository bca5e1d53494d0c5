extension Store {
    /// Adds a subscription, which receives the changes committed from now on.
    @usableFromInline
    func addObserver(_ entry: ObserverEntry) {
        lockState(for: "subscribe to it")
        entry.since = nextChangeNumberLocked
        withBookkeepingLocked { $0.observers.add(entry) }
        guarded.unlock()
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
        lockState(for: "subscribe to it")
        let since = nextChangeNumberLocked
        let existing = withBookkeepingLocked { $0.observers.group(for: keyPath) }
        let group: KeyPathGroup
        if let existing {
            group = existing
        } else {
            group = makeGroup(storage.pointee)
            group.since = since
        }
        let entry = ObserverEntry(id: id, object: nil, group: group, call: makeCall(group))
        entry.since = since
        withBookkeepingLocked { $0.observers.add(entry) }
        guarded.unlock()
    }

    /// Ends a subscription (and forgets how to end it, for a state stream).
    @usableFromInline
    func removeSubscription(id: UInt64) {
        lockState(for: "end a subscription")
        withBookkeepingLocked { bookkeeping in
            bookkeeping.observers.remove(id: id)
            bookkeeping.streamEnds[id] = nil
        }
        guarded.unlock()
    }

    /// Adds a state stream's subscription: `makeEntry` gets the current state, read at one instant
    /// with the subscription's start (the subscription receives the changes committed after it).
    ///
    /// - Parameters:
    ///   - id: The subscription's identifier.
    ///   - end: Ends the stream; called when the store is unregistered or released.
    ///   - makeEntry: Creates the subscription. Called under the store's lock.
    func addStream(
        id: UInt64,
        end: @escaping @Sendable () -> Void,
        makeEntry: (_ current: State) -> ObserverEntry
    ) {
        lockState(for: "subscribe to it")
        let entry = makeEntry(storage.pointee)
        entry.since = nextChangeNumberLocked
        withBookkeepingLocked { bookkeeping in
            bookkeeping.observers.add(entry)
            bookkeeping.streamEnds[id] = end
        }
        guarded.unlock()
    }

    /// The number the next change queued will get; call with the store's lock held.
    private var nextChangeNumberLocked: UInt64 {
        withBookkeepingLocked { $0.takenChanges } + UInt64(pendingChanges.count)
    }

    /// Ends every state stream (the store was unregistered).
    func endStateStreams() {
        lockState(for: "unregister it")
        let ends = withBookkeepingLocked { bookkeeping in
            defer { bookkeeping.streamEnds = [:] }
            return bookkeeping.streamEnds
        }
        guarded.unlock()
        for end in ends.values {
            end()
        }
    }

    /// Ends the subscriptions bound to `object`, and those whose object was released.
    func removeObservers(boundTo object: AnyObject) {
        lockState(for: "unregister an observer")
        withBookkeepingLocked { bookkeeping in
            bookkeeping.observers.removeAll { entry in
                entry.isBoundToObject && (entry.object == nil || entry.object === object)
            }
        }
        guarded.unlock()
    }
}
