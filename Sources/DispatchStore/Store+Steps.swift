import Foundation

extension Store {
    /// Asks the reducer for the operation of one action and starts it, or applies the action at once
    /// through `reduce(_:into:)` when the reducer returns none; see `StoreEntry`.
    ///
    /// Leaves the sequence number the store gave the action in `context.appliedSequenceNumber` (0
    /// when the step did not apply it, or not yet).
    func beginStep(
        _ actionPointer: UnsafeRawPointer,
        prepared: Operation?,
        dependencies: [Operation]?,
        context: ThreadContext,
        makeFinishHook: () -> StepStart.FinishHook
    ) -> StepStart {
        // The route only holds stores whose `Action` is the dispatched action's type.
        let action = actionPointer.assumingMemoryBound(to: Action.self).pointee
        let answer: ActionOperation<State, Action>?
        if _slowPath(prepared != nil) {
            answer = Self.operation(prepared)
        } else {
            answer = reducer.operation(for: action, in: self)
        }
        guard let operation = answer else {
            return reduceInline(action, context: context)
        }
        context.appliedSequenceNumber = 0
        guard operation.claimForDispatcher() else {
            return .failed(DispatchError.operationReused(identifier), needsDelivery: false)
        }
        // A custom operation would deadlock in updateState if this thread already holds the lock.
        guard lockStateUnlessHeld(context: context) else {
            return .failed(DispatchError.reentrant(identifier), needsDelivery: false)
        }
        withBookkeepingLocked { $0.operationsInFlight += 1 }
        guarded.unlock()

        for dependency in dependencies ?? [] {
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
                return .finished(operation, status, needsDelivery: notified)
            }
        } else {
            // The reducer gave the operation dependencies of its own; let a queue wait for them.
            OperationQueues.externalDependencies.addOperation(operation)
        }
        return .running(operation)
    }

    /// The operation a step was prepared with, which this store's reducer returned, so of its type;
    /// out of line, so that the common step looks up no generic metadata (S4, S5).
    @inline(never)
    private static func operation(_ prepared: Operation?) -> ActionOperation<State, Action>? {
        prepared.map { unsafeDowncast($0, to: ActionOperation<State, Action>.self) }
    }

    /// Applies `action` through `reduce(_:into:)` under the store's lock, numbers it and queues the
    /// change for the observers.
    ///
    /// - Returns: A finished step, or a failed one when this thread already holds the store's lock
    ///   (a `.sync` dispatch from inside the store's own `updateState` or `reduce(_:into:)`).
    private func reduceInline(_ action: Action, context: ThreadContext) -> StepStart {
        guard lockStateUnlessHeld(context: context) else {
            context.appliedSequenceNumber = 0
            return .failed(DispatchError.reentrant(identifier), needsDelivery: false)
        }
        context.beginHolding(ObjectIdentifier(self))
        reducer.reduce(action, into: &storage.pointee)
        context.endHolding()
        let sequenceNumber = withBookkeepingLocked { bookkeeping in
            bookkeeping.sequenceNumber += 1
            return bookkeeping.sequenceNumber
        }
        let notified = queueChangeIfObservedLocked(action: action)
        guarded.unlock()
        context.appliedSequenceNumber = sequenceNumber
        return .reduced(needsDelivery: notified)
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
        lockState(for: "finish one of its operations")
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
