import Foundation

/// What reaches a run from other threads (an operation finishing, a cancel, a timeout or shutdown
/// giving up, the hand-back that follows), and how a run gets ready for them when it suspends.
extension TransactionRun {
    /// What step `index`'s operation calls if it finishes after starting (on any thread).
    func finishHook(for index: Int) -> StepFinishHook {
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
        let ending: TransactionMachine.Ending
        var failure: (any Error)?
        switch status {
        case .finished: ending = .finished
        case .cancelled: ending = .cancelled
        case .failed(let error):
            ending = .failed
            failure = error
        }
        if machine.pointee.steps[index].phase == .running {
            record(error: failure, sequenceNumber: sequenceNumber, of: index)
        }
        let resumption = machine.pointee.finished(index, ending: ending)
        unlock()
        switch resumption {
        case .none: break
        case .resume: resume()
        case .late: route?.stores[index].deliverPendingChanges()
        }
    }

    /// Cancels the transaction and its running operations; returns `false` when it had completed, was
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

    /// Gives up on the operations still running (cancelled, reported so, not waited for); returns `false`
    /// when the transaction had completed.
    @discardableResult
    func giveUp(_ reason: TransactionMachine.GiveUpReason) -> Bool {
        lock()
        let given = machine.pointee.giveUp(reason)
        let running = given.map { given in
            given.steps.compactMap { index in operations(at: [index]).first.map { (index, $0) } }
        }
        unlock()
        for (index, operation) in running ?? [] {
            route?.stores[index].abandon(operation)
            operation.cancel()
        }
        if given?.resume == true { resume() }
        return given != nil
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

    /// Registers a run that must wait for an operation and arms its timer (call with the machine locked),
    /// and returns what a shutdown in progress wants done to it.
    func prepareToWait(suspendedRuns: SuspendedRuns?) -> SuspendedRuns.Policy {
        precondition(body.pointee.isShared, "DispatchStore: a run waits for an operation nobody can finish")
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
                _ = reference.run?.giveUp(.timeout)
            }
        }
        return policy
    }

    /// Carries out a shutdown's policy on the run, outside the lock.
    func apply(_ policy: SuspendedRuns.Policy) {
        switch policy {
        case .none: break
        case .cancel: requestCancel()
        case .giveUp: giveUp(.shutdown)
        }
    }

    /// The transaction completed: a run that waited leaves the shutdown's list before its result.
    @inline(__always)
    func didComplete() { if body.pointee.hasSuspended { unregister() } }

    /// Removes the run from the runs that wait, where it registered when it first waited.
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
