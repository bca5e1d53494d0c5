extension AnyStore {
    /// Makes the store refuse every change that no action makes: for a store whose state must follow
    /// something else, such as a replicated log that every copy of the store applies in the same
    /// order.
    ///
    /// From then on:
    /// - ``Store/updateState(_:)`` called outside the store's own operations stops the program with
    ///   a message naming the store and `reason`, before its closure runs (a programming error, like
    ///   updating a store from inside its own reducer);
    /// - a recorder's restore (``RecorderMiddleware/previous()``, `next()`, `jump(to:)`) is refused
    ///   with ``DispatchError/Code/outsideChangeRefused``, changing no store;
    /// - a ``DispatchStoreJournal/Journal`` refuses to open on the store's dispatcher, since its recovery would set the
    ///   state.
    ///
    /// Actions still reach the store: refusing the dispatches that do not come from the log it
    /// follows is the owner's part, in a middleware (see ``Transaction/cancel()``).
    /// ``DispatchStoreJournal/Journal/SnapshotContents/restore()`` still sets it: loading a snapshot is how its owner
    /// brings it to a known state.
    ///
    /// ```swift
    /// balances.refuseOutsideChanges("store 'balances' follows the stream LEDGER; use replication.perform(_:)")
    /// ```
    ///
    /// - Parameter reason: Why, as a sentence or clause naming what the store follows and what to
    ///   use instead; it appears in every refusal.
    /// - Note: Thread-safe. Calling it again replaces the reason.
    public func refuseOutsideChanges(_ reason: String) {
        (self as? any StoreEntry)?.stateLock.withLockedValue { $0.outsideChangeRefusal = reason }
    }

    /// Lets the store take changes made outside its actions again, undoing
    /// ``refuseOutsideChanges(_:)``.
    ///
    /// - Note: Thread-safe.
    public func allowOutsideChanges() {
        (self as? any StoreEntry)?.stateLock.withLockedValue { $0.outsideChangeRefusal = nil }
    }

    /// Why the store refuses changes made outside its actions, or `nil` when it takes them.
    ///
    /// - Note: Thread-safe; not from inside the store's own `updateState` closure or `reduce(_:into:)`.
    public var outsideChangeRefusal: String? {
        (self as? any StoreEntry)?.stateLock.withLockedValue { $0.outsideChangeRefusal }
    }
}

extension Store {
    /// Stops the program, naming the store and the reason it refuses outside changes.
    ///
    /// Called by `updateState` outside the store's operations, with the store's lock held.
    @inline(never)
    func refusedUpdate() -> Never {
        let reason = withBookkeepingLocked { $0.outsideChangeRefusal } ?? ""
        guarded.unlock()
        preconditionFailure(
            "DispatchStore: store '\(identifier)' refuses changes made outside its actions (\(reason)); "
                + "updateState was called outside the store's operations"
        )
    }
}
