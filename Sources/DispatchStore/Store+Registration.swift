extension Store {
    /// Claims the store for a dispatcher.
    ///
    /// - Returns: Whether this call made the claim, found it made already by the same dispatcher, or
    ///   found the store held by another dispatcher.
    func claim(for dispatcher: ObjectIdentifier) -> StoreClaim {
        lockState(for: "register it")
        defer { guarded.unlock() }
        return withBookkeepingLocked { bookkeeping in
            switch bookkeeping.owner {
            case nil:
                bookkeeping.owner = dispatcher
                return .claimed
            case dispatcher:
                return .alreadyHeld
            default:
                return .heldElsewhere
            }
        }
    }

    /// Gives up the claim of `dispatcher`, if it holds the store.
    func release(from dispatcher: ObjectIdentifier) {
        lockState(for: "unregister it")
        withBookkeepingLocked { bookkeeping in
            if bookkeeping.owner == dispatcher { bookkeeping.owner = nil }
        }
        guarded.unlock()
    }

    /// Runs `body` with the bookkeeping under the store's lock, for `what` a caller does; see
    /// ``lockState(for:)``.
    func withBookkeeping<Result>(for what: String, _ body: (inout StoreBookkeeping) -> Result) -> Result {
        lockState(for: what)
        defer { guarded.unlock() }
        return withBookkeepingLocked(body)
    }

    /// The store's lock, for taking several stores' locks at once (a consistent cut).
    var stateLock: LockedBox<StoreBookkeeping> {
        guarded
    }

    /// The state, for a caller already holding the store's lock.
    var stateLocked: any StateType {
        storage.pointee
    }

    /// The sequence number, for a caller already holding the store's lock.
    var sequenceNumberLocked: UInt64 {
        withBookkeepingLocked { $0.sequenceNumber }
    }

    /// Why the store refuses outside changes, for a caller already holding the store's lock.
    var outsideChangeRefusalLocked: String? {
        withBookkeepingLocked { $0.outsideChangeRefusal }
    }

    /// Replaces the state for a caller already holding the store's lock; queues a change with a
    /// `nil` action.
    ///
    /// - Returns: Whether a change was queued (call `deliverPendingChanges()` after unlocking), or
    ///   `nil` when `state` is not of this store's state type.
    func replaceStateLocked(_ state: any StateType) -> Bool? {
        guard let typed = state as? State else { return nil }
        storage.pointee = typed
        guard !withBookkeepingLocked({ $0.observers.isEmpty }) else { return false }
        queueChangeLocked(action: nil)
        return true
    }
}

extension Store: StoreEntry {
    func isHeld(context: ThreadContext) -> Bool {
        context.holds(ObjectIdentifier(self))
    }

    func makeShortcut() -> RouteShortcut {
        TypedRouteShortcut(store: self)
    }

}
