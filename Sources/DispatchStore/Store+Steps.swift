import Foundation

extension Store {
    /// Runs `reduce(_:into:)` at once when the dispatcher is asking this store's reducer for an
    /// operation on this thread; called by the default `Reducer.operation(for:in:)`.
    ///
    /// - Returns: The store's already-finished placeholder operation, or `nil` when the call does not
    ///   come from the dispatcher (the caller then builds a real operation).
    func reduceInline(_ action: Action, with reducer: Reducer<State, Action>) -> ActionOperation<State, Action>? {
        let context = ThreadContext.current(key: contextKey)
        guard context.inlineStore == ObjectIdentifier(self) else { return nil }
        guard guarded.lockUnlessOwned() else {
            context.inlineResult = .reentrant
            return ActionOperation(placeholderFor: self, action: action)
        }
        reducer.reduce(action, into: &storage.pointee)
        let sequenceNumber = withBookkeepingLocked { bookkeeping in
            bookkeeping.sequenceNumber += 1
            return bookkeeping.sequenceNumber
        }
        let notified = queueChangeIfObservedLocked(action: action)
        let marker: ActionOperation<State, Action>
        if let existing = inlineMarker.pointee {
            marker = existing
        } else {
            marker = ActionOperation(placeholderFor: self, action: action)
            inlineMarker.pointee = marker
        }
        guarded.unlock()
        context.inlineResult = .reduced(notified: notified)
        context.appliedSequenceNumber = sequenceNumber
        return marker
    }

    /// Asks the reducer for the operation of one action and starts it; see `StoreEntry`.
    ///
    /// Leaves the sequence number the store gave the action in `context.appliedSequenceNumber` (0
    /// when the step did not apply it, or not yet).
    func beginStep(
        _ actionPointer: UnsafeRawPointer,
        dependencies: [Operation],
        context: ThreadContext,
        makeFinishHook: () -> StepFinishHook
    ) -> StepStart {
        // The route only holds stores whose `Action` is the dispatched action's type.
        let action = actionPointer.assumingMemoryBound(to: Action.self).pointee
        let savedStore = context.inlineStore
        let savedResult = context.inlineResult
        context.inlineStore = ObjectIdentifier(self)
        context.inlineResult = .none
        let operation = reducer.operation(for: action, in: self)
        let inline = context.inlineResult
        context.inlineStore = savedStore
        context.inlineResult = savedResult

        if operation.isPlaceholder {
            // `reduceInline` set `appliedSequenceNumber`.
            switch inline {
            case .reduced(let notified):
                return .finished(needsDelivery: notified)
            case .reentrant:
                context.appliedSequenceNumber = 0
                return .failed(DispatchError.reentrant(identifier), needsDelivery: false)
            case .none:
                context.appliedSequenceNumber = 0
                return .finished(needsDelivery: false)
            }
        }
        context.appliedSequenceNumber = 0
        let notifiedInline: Bool
        if case .reduced(true) = inline { notifiedInline = true } else { notifiedInline = false }

        guard operation.claimForDispatcher() else {
            let error = DispatchError.operationReused(identifier)
            return .failed(error, needsDelivery: notifiedInline)
        }
        // A custom operation would deadlock in updateState if this thread already holds the lock.
        guard guarded.lockUnlessOwned() else {
            return .failed(DispatchError.reentrant(identifier), needsDelivery: false)
        }
        withBookkeepingLocked { $0.operationsInFlight += 1 }
        guarded.unlock()

        for dependency in dependencies {
            operation.addDependency(dependency)
        }
        let hook = makeFinishHook()
        operation.setFinishHook { [self] status, ranBody in
            let (_, sequenceNumber) = endOperation(action: action, ranBody: ranBody)
            hook(status, sequenceNumber)
        }
        if operation.isReady {
            if let (status, ranBody) = operation.runInline() {
                let (notified, sequenceNumber) = endOperation(action: action, ranBody: ranBody)
                context.appliedSequenceNumber = sequenceNumber
                return .ended(operation, status, needsDelivery: notified || notifiedInline)
            }
        } else {
            // The reducer gave the operation dependencies of its own; let a queue wait for them.
            OperationQueues.externalDependencies.addOperation(operation)
        }
        return .running(operation)
    }

    func abandon(_ operation: Operation) {
        guard let operation = operation as? ActionOperation<State, Action>, operation.detachFinishHook() else { return }
        guarded.lock()
        withBookkeepingLocked { $0.operationsInFlight -= 1 }
        // What the operation changed so far was held back for its commit, which will not come.
        let queued = queueUpdateIfObservedLocked()
        guarded.unlock()
        if queued { deliverPendingChanges() }
    }

    /// Commits the end of one of this store's operations: numbers the action if the body ran, and
    /// queues the change for the observers.
    ///
    /// - Returns: Whether a change was queued, and the action's sequence number (0 when the body
    ///   never ran).
    private func endOperation(action: Action, ranBody: Bool) -> (notified: Bool, sequenceNumber: UInt64) {
        guarded.lock()
        defer { guarded.unlock() }
        let sequenceNumber = withBookkeepingLocked { bookkeeping in
            bookkeeping.operationsInFlight -= 1
            guard ranBody else { return UInt64(0) }
            bookkeeping.sequenceNumber += 1
            return bookkeeping.sequenceNumber
        }
        return (ranBody && queueChangeIfObservedLocked(action: action), sequenceNumber)
    }
}
