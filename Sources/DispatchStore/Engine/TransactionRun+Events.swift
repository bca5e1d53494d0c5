import Foundation

/// What reaches a run from other threads (an operation finishing, a cancel, a timeout or shutdown
/// abandoning it, the hand-back that follows), and how a run gets ready for them when it suspends.
extension TransactionRun {
    /// What step `index`'s operation calls if it finishes after starting (on any thread).
    func finishHook(for index: Int) -> StepStart.FinishHook {
        // The operation may finish on another thread from now on.
        body.pointee.isShared = true
        let reference = Reference(run: self)
        return { status, sequenceNumber in
            reference.run.stepFinished(index, status: status, sequenceNumber: sequenceNumber)
        }
    }

    /// Called, once per step, when an operation that was still running finishes (on any thread).
    func stepFinished(_ index: Int, status: StoreOutcome.Status, sequenceNumber: UInt64) {
        lock()
        if machine.pointee.steps[index].phase == .running {
            record(error: status.error, sequenceNumber: sequenceNumber, of: index)
        }
        let resumption = machine.pointee.finished(index, ending: status.ending)
        unlock()
        switch resumption {
        case .none: break
        case .resume: resume()
        case .late: route?.stores[index].deliverPendingChanges()
        }
    }

    /// Cancels the transaction and its running operations; returns `false` when it had finished, was
    /// cancelled already, or reaches no store.
    @discardableResult
    func requestCancel() -> Bool {
        lock()
        let steps = machine.pointee.cancel()
        let running = steps.map { operations(at: $0) } ?? []
        // Read under the lock: once it is released, the run's driver may clear it for reuse.
        let reachesStores = route != nil
        unlock()
        for operation in running { operation.cancel() }
        return steps != nil && reachesStores
    }

    /// Abandons the operations still running (cancelled, reported so, not waited for); returns `false`
    /// when the transaction had finished.
    @discardableResult
    func abandon(_ reason: TransactionMachine.AbandonReason) -> Bool {
        lock()
        let abandoned = machine.pointee.abandon(reason)
        let running = abandoned.map { abandoned in
            abandoned.steps.compactMap { index in operations(at: [index]).first.map { (index, $0) } }
        }
        unlock()
        for (index, operation) in running ?? [] {
            route?.stores[index].abandon(operation)
            operation.cancel()
        }
        if abandoned?.resume == true { resume() }
        return abandoned != nil
    }

    /// Hands the run back to whoever drives it.
    fileprivate func resume() {
        if body.pointee.isQueued, let lane = body.pointee.lane {
            lane.resume(self)
        } else if body.pointee.configuration.blocksCaller {
            lock()
            let signal = body.pointee.callerSignal
            unlock()
            signal?.signal()
        } else {
            // Nobody waits for the run: go on on this thread (it is registered already).
            _ = drive(suspendedRuns: nil)
        }
    }

    /// Registers a run that must suspend until an operation finishes and arms its timer (call with the
    /// machine locked), and returns what a shutdown in progress wants done to it.
    func prepareToSuspend(suspendedRuns: SuspendedRuns?) -> SuspendedRuns.Policy {
        precondition(body.pointee.isShared, "DispatchStore: a run suspends for an operation nobody can finish")
        var policy = SuspendedRuns.Policy.none
        if !body.pointee.hasSuspended {
            body.pointee.hasSuspended = true
            if body.pointee.configuration.blocksCaller && !body.pointee.isQueued {
                body.pointee.callerSignal = DispatchSemaphore(value: 0)
            }
            if let suspendedRuns {
                body.pointee.registeredIn = suspendedRuns
                policy = suspendedRuns.add(self)
            }
        }
        if body.pointee.deadline != 0 && !body.pointee.timerArmed {
            body.pointee.timerArmed = true
            let reference = WeakReference(run: self)
            OperationQueues.timers.asyncAfter(deadline: DispatchTime(uptimeNanoseconds: body.pointee.deadline)) {
                _ = reference.run?.abandon(.timeout)
            }
        }
        return policy
    }

    /// Carries out a shutdown's policy on the run, outside the lock.
    func apply(_ policy: SuspendedRuns.Policy) {
        switch policy {
        case .none: break
        case .cancel: requestCancel()
        case .abandon: abandon(.shutdown)
        }
    }

    /// The transaction finished: a run that suspended leaves the shutdown's list before its result.
    @inline(__always)
    func didFinish() { if body.pointee.hasSuspended { unregister() } }

    /// Removes the run from the suspended runs, where it registered when it first suspended.
    private func unregister() {
        let locked = lockMachine()
        let registeredIn = body.pointee.registeredIn
        body.pointee.registeredIn = nil
        unlockMachine(locked)
        registeredIn?.remove(self)
    }
}

extension TransactionRun {
    /// A run that a timer may find gone, handed to another thread.
    struct WeakReference: @unchecked Sendable {
        // @unchecked: see `Reference`.
        weak var run: TransactionRun?
    }

    /// A run handed to other threads: by a transaction (to cancel, to read its route), a finish hook.
    struct Reference: @unchecked Sendable {
        // @unchecked: a run's `transaction`, `configuration` and `isShared` are written only while one
        // thread owns it (creation, `configure`, its driver before sharing it), otherwise read; the
        // rest is touched under its lock, which only its driver skips, while nobody else can reach it.
        let run: TransactionRun
    }
}
