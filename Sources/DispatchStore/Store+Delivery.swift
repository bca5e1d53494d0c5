extension Store {
    /// Calls the observers with every queued change, in commit order.
    ///
    /// Waits while another thread delivers this store's changes (then delivers what is left), except
    /// when this thread is itself inside an observer callback: it then leaves the work to the thread
    /// already delivering, which delivers everything queued, so that two threads each delivering one
    /// store and dispatching `.sync` into the other cannot deadlock.
    func deliverPendingChanges() {
        let context = ThreadContext.current
        if context.deliveryDepth == 0 {
            deliveryLock.lock()
        } else if !deliveryLock.tryLock() {
            return
        }
        context.deliveryDepth += 1
        defer {
            context.deliveryDepth -= 1
            deliveryLock.unlock()
        }
        while true {
            if cursor.change == nil {
                guarded.lock()
                guard let next = pendingChanges.popFirst() else {
                    guarded.unlock()
                    break
                }
                let observers = withBookkeepingLocked { $0.observers }
                guarded.unlock()
                cursor.start(next, observers: observers)
            }
            deliverCurrentChange()
        }
        if cursor.position.pointee.sawReleasedObserver {
            cursor.position.pointee.sawReleasedObserver = false
            guarded.withLockedValue { bookkeeping in
                let released = { (entry: ObserverEntry) in entry.isBoundToObject && entry.object == nil }
                if let smaller = bookkeeping.observers.removing(where: released) {
                    bookkeeping.observers = smaller
                }
            }
        }
    }

    /// Delivers the cursor's change to the subscriptions not called yet.
    ///
    /// A callback may deliver re-entrantly; the cursor then shows what is left (or that a newer
    /// change started).
    private func deliverCurrentChange() {
        guard let change = cursor.change else { return }
        let position = cursor.position
        let generation = position.pointee.generation
        let observers = cursor.observers
        let ranges = cursor.ranges
        withUnsafePointer(to: change.state) { state in
            withUnsafeOptionalPointer(to: change.action) { action in
                observers.unretainedEntries.withUnsafeBufferPointer { entries in
                    while position.pointee.generation == generation, position.pointee.range < ranges.count {
                        let index = position.pointee.index
                        let range = ranges[position.pointee.range]
                        guard index < range.upperBound else {
                            position.pointee.range += 1
                            if position.pointee.range < ranges.count {
                                position.pointee.index = ranges[position.pointee.range].lowerBound
                            }
                            continue
                        }
                        position.pointee.index = index + 1
                        entries[index]._withUnsafeGuaranteedRef { entry in
                            guard !entry.isBoundToObject || entry.object != nil else {
                                position.pointee.sawReleasedObserver = true
                                return
                            }
                            entry.call(state, action)
                        }
                    }
                }
            }
        }
        if position.pointee.generation == generation {
            cursor.finish()
        }
    }
}
