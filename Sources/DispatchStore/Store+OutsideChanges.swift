extension AnyStore {
    /// Why the store refuses every change that no action makes; `nil` (the default) takes them.
    ///
    /// Set a reason for a store whose state must follow something else, such as a replicated log
    /// that every copy of the store applies in the same order; set `nil` to take them again.
    ///
    /// While a reason is set:
    /// - ``Store/updateState(_:)`` called while none of the store's operations runs stops the
    ///   program with a message naming the store and the reason, before its closure runs (a
    ///   programming error, like updating a store from inside its own reducer). The check is that no
    ///   operation runs, not which thread calls: a call from elsewhere while one runs is not caught;
    /// - a recorder's restore (``RecorderMiddleware/previous()``, `next()`, `jump(to:)`) is refused
    ///   with ``DispatchError/Code/outsideChangeRefused``, changing no store;
    /// - a ``DispatchStoreJournal/Journal`` refuses to open on the store's dispatcher, since its
    ///   recovery would set the state.
    ///
    /// Actions still reach the store: refusing the dispatches that do not come from the log it
    /// follows is the owner's part, in a middleware (see ``Transaction/cancel()``).
    /// `Journal.SnapshotContents.restore()` still sets it: loading a snapshot
    /// is how its owner brings it to a known state.
    ///
    /// ```swift
    /// balances.outsideChangeRefusal = "it follows the stream LEDGER; use replication.perform(_:)"
    /// ```
    ///
    /// The reason is a sentence or clause naming what the store follows and what to use instead; it
    /// appears in every refusal.
    ///
    /// - Note: Thread-safe; not from inside the store's own `updateState` closure or
    ///   `reduce(_:into:)`.
    @_spi(DispatchStoreNATS)
    public var outsideChangeRefusal: String? {
        get {
            (self as? any StoreEntry)?.withBookkeeping(for: "read its outsideChangeRefusal") {
                $0.outsideChangeRefusal
            }
        }
        set {
            (self as? any StoreEntry)?.withBookkeeping(for: "set its outsideChangeRefusal") {
                $0.outsideChangeRefusal = newValue
            }
        }
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
