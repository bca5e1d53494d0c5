extension Store {
    /// Calls the observers with every queued change, in commit order, and returns once the changes
    /// queued so far were delivered.
    ///
    /// Waits while another thread delivers this store's changes (then delivers what is left). From
    /// inside an observer callback, where that thread may in turn wait for a store this thread is
    /// delivering, it waits through ``DeliveryWaits``, which helps deliver meanwhile, so that two
    /// threads each delivering one store and dispatching `.sync` into the other cannot deadlock.
    func deliverPendingChanges() {
        deliverPendingChanges(context: ThreadContext.current)
    }

    /// ``deliverPendingChanges()`` for a caller that has the thread's context at hand.
    func deliverPendingChanges(context: ThreadContext) {
        if context.deliveryDepth == 0 {
            deliveryLock.lock()
        } else if !deliveryLock.tryLock() {
            waitForDelivery()
            return
        }
        deliverLocked(context: context)
    }

    /// Delivers the queued changes if this thread can take the delivery at once (it is free, or this
    /// thread holds it further up its stack); see ``DeliveryWaits``.
    func deliverPendingChangesIfFree() {
        guard deliveryLock.tryLock() else { return }
        deliverLocked(context: ThreadContext.current)
    }

    /// Waits until another thread delivered the changes queued so far, helping meanwhile.
    private func waitForDelivery() {
        guarded.lock()
        let queued = UInt64(pendingChanges.count)
        let (target, delivered) = withBookkeepingLocked { bookkeeping in
            let target = bookkeeping.takenChanges + queued
            let delivered = bookkeeping.deliveredChanges >= target
            if !delivered { bookkeeping.deliveryWaiters += 1 }
            return (target, delivered)
        }
        guarded.unlock()
        guard !delivered else { return }
        DeliveryWaits.shared.wait(for: self) {
            guarded.withLockedValue { $0.deliveredChanges >= target }
        }
        guarded.withLockedValue { $0.deliveryWaiters -= 1 }
    }

    /// Delivers every queued change, then releases the delivery lock, which the caller holds.
    ///
    /// The delivery ends under the store's lock: a change queued after the last look at the queue
    /// finds the delivery free, so that its committer delivers it.
    private func deliverLocked(context: ThreadContext) {
        context.deliveryDepth += 1
        while true {
            if cursor.change == nil {
                guarded.lock()
                let taken = cursor.take(from: pendingChanges)
                let (number, waited) = withBookkeepingLocked { bookkeeping in
                    let number = bookkeeping.takenChanges
                    bookkeeping.deliveredChanges = number
                    if taken { bookkeeping.takenChanges += 1 }
                    return (number, bookkeeping.deliveryWaiters > 0)
                }
                guard taken else {
                    if cursor.position.pointee.sawReleasedObserver { removeReleasedObserversLocked() }
                    context.deliveryDepth -= 1
                    deliveryLock.unlock()
                    guarded.unlock()
                    if waited { DeliveryWaits.shared.wake() }
                    return
                }
                let observers = withBookkeepingLocked { $0.observers.currentSet() }
                guarded.unlock()
                if waited { DeliveryWaits.shared.wake() }
                cursor.start(number: number, observers: observers)
            }
            deliverCurrentChange()
        }
    }

    /// Drops the subscriptions whose object was released; call holding both locks.
    private func removeReleasedObserversLocked() {
        cursor.position.pointee.sawReleasedObserver = false
        withBookkeepingLocked { bookkeeping in
            bookkeeping.observers.removeAll { $0.isBoundToObject && $0.object == nil }
        }
    }

    /// Delivers the cursor's change to the subscriptions not called yet.
    ///
    /// A callback may deliver re-entrantly; the cursor then shows what is left (or that a newer
    /// change started).
    private func deliverCurrentChange() {
        // Held here for the whole loop: a callback that delivers re-entrantly may end this change
        // in the cursor and start the next one, while the calls still running borrow this one's
        // state. The loop stops once the generation moved on.
        guard let change: AnyObject = cursor.change else { return }
        let position = cursor.position
        let generation = position.pointee.generation
        let observers = cursor.observers
        let ranges = cursor.ranges
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
                    entry.call(change)
                }
            }
        }
        if position.pointee.generation == generation {
            cursor.finish()
        }
    }
}
