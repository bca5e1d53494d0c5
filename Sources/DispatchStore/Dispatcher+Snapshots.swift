extension Dispatcher {
    /// The states of all registered stores at one instant: no commit happens between two reads.
    ///
    /// - Returns: The snapshots in registration order, or `nil` when the calling thread is inside a
    ///   store's `updateState` or `reduce` (taking the cut would deadlock).
    package func consistentCut() -> [StoreSnapshot]? {
        let (stores, lockOrder) = engine.storesWithLockOrder
        guard Dispatcher.lockAll(lockOrder) else { return nil }
        let snapshots = stores.map { store in
            StoreSnapshot(
                storeIdentifier: store.identifier,
                state: store.stateLocked,
                sequenceNumber: store.sequenceNumberLocked
            )
        }
        Dispatcher.unlockAll(lockOrder)
        return snapshots
    }

    /// Sets the state of every registered store found in `snapshots`, all at one instant.
    ///
    /// Stores missing from `snapshots`, or whose state type differs, keep their state. The changes
    /// are queued for the stores' observers (with a `nil` action): call `deliverPendingChanges()` on
    /// the returned stores once the caller's own locks are released.
    ///
    /// - Returns: The stores whose state was replaced; or, changing nothing, `.reentrant` when the
    ///   calling thread is inside a store's `updateState` or `reduce`, `.refused` when one of the
    ///   stores refuses outside changes.
    func restore(_ snapshots: [StoreSnapshot]) -> Restored {
        let (stores, lockOrder) = engine.storesWithLockOrder
        let states = Dictionary(snapshots.map { ($0.storeIdentifier, $0.state) }) { first, _ in first }
        guard Dispatcher.lockAll(lockOrder) else { return .reentrant }
        for store in stores where states[store.identifier] != nil {
            if let reason = store.outsideChangeRefusalLocked {
                Dispatcher.unlockAll(lockOrder)
                return .refused(storeIdentifier: store.identifier, reason: reason)
            }
        }
        var changed: [any StoreEntry] = []
        for store in stores {
            if let state = states[store.identifier], store.replaceStateLocked(state) == true {
                changed.append(store)
            }
        }
        Dispatcher.unlockAll(lockOrder)
        return .restored(changed)
    }

    /// What ``restore(_:)`` did.
    enum Restored {
        /// The stores whose state was replaced.
        case restored([any StoreEntry])
        /// Nothing: the calling thread is inside a store's `updateState` or `reduce`.
        case reentrant
        /// Nothing: the store refuses outside changes, for the reason given.
        case refused(storeIdentifier: String, reason: String)
    }

    /// Locks every store without ever waiting while holding one.
    ///
    /// Tries each lock in order; when one is busy, releases the others, waits for that one alone,
    /// releases it and starts over. So a reducer that reads another store's state under its own lock
    /// cannot deadlock with a cut.
    ///
    /// - Returns: `false`, holding nothing, when the calling thread already holds one of the locks.
    private static func lockAll(_ stores: [any StoreEntry]) -> Bool {
        let context = ThreadContext.current
        if stores.contains(where: { $0.isHeld(context: context) }) { return false }
        while true {
            var locked = 0
            while locked < stores.count, stores[locked].stateLock.tryLock() {
                locked += 1
            }
            if locked == stores.count { return true }
            unlockAll(stores[..<locked])
            let busy = stores[locked].stateLock
            busy.lock()
            busy.unlock()
        }
    }

    private static func unlockAll(_ stores: some Collection<any StoreEntry>) {
        for store in stores.reversed() {
            store.stateLock.unlock()
        }
    }
}
