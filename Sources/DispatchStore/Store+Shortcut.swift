extension Store {
    /// Dispatches the action at `actionPointer` `.sync` through `shortcut`, the route of this store
    /// alone, which the caller entered (``RouteShortcut/enter(context:)``), for a caller that reads no
    /// result: one store's inline step with no transaction run.
    ///
    /// Asks the reducer outside the store's lock, then takes the lock to reduce, number the action,
    /// queue the change and leave the shortcut, and delivers the change after unlocking.
    func dispatch(
        _ actionPointer: UnsafePointer<Action>,
        through shortcut: RouteShortcut,
        context: ThreadContext
    ) -> RouteShortcut.Passage {
        let action = actionPointer.pointee
        if let operation = reducer.operation(for: action, in: self) {
            guarded.lock()
            let released = shortcut.leaveLocked()
            guarded.unlock()
            context.leave(released: released, prepared: TransactionRun.PreparedStep(store: self, operation: operation))
            return .operation
        }
        guarded.lock()
        context.beginHolding(ObjectIdentifier(self))
        reducer.reduce(action, into: &storage.pointee)
        context.endHolding()
        let observed = withBookkeepingLocked { bookkeeping in
            bookkeeping.sequenceNumber += 1
            return !bookkeeping.observers.isEmpty
        }
        if observed { queueChangeLocked(action: actionPointer) }
        let released = shortcut.leaveLocked()
        guarded.unlock()
        if observed { deliverPendingChanges(context: context) }
        if let released {
            context.leave(released: released)
            return .reducedReleasing
        }
        return .reduced
    }
}
