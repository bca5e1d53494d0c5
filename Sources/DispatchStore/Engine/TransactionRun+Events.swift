import Foundation

/// What other threads do to a run: an operation finishing, a cancellation, a timeout or a shutdown
/// giving up, and the hand-back that follows.
extension TransactionRun {
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

    /// Cancels the transaction's operations that have not finished yet.
    ///
    /// - Returns: Whether this call cancelled the transaction: `false` when it had completed or was
    ///   cancelled already, or reaches no store.
    @discardableResult
    func requestCancel() -> Bool {
        lock()
        let steps = machine.pointee.cancel()
        let running = steps.map { runState.pointee.operations(at: $0) } ?? []
        // Read under the lock: once it is released, the run's driver may clear it for reuse.
        let reachesStores = route != nil
        unlock()
        for operation in running {
            operation.cancel()
        }
        return steps != nil && reachesStores
    }

    /// Gives up on the operations still running: they are cancelled and reported as such, and the
    /// completion runs without waiting for them.
    ///
    /// - Returns: Whether this call gave up on the transaction (`false` when it had completed).
    @discardableResult
    func giveUp(_ reason: TransactionMachine.GiveUpReason) -> Bool {
        lock()
        let given = machine.pointee.giveUp(reason)
        let running = given.map { given in
            given.steps.compactMap { index in runState.pointee.operations(at: [index]).first.map { (index, $0) } }
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
            let signal = runState.pointee.callerSignal
            unlock()
            signal?.signal()
        } else {
            // Nobody waits for the run: go on on this thread (it is registered already).
            _ = drive(suspendedRuns: nil)
        }
    }
}

extension TransactionRun {
    /// A run that a timer may find gone, handed to another thread.
    struct WeakReference: @unchecked Sendable {
        // @unchecked: see `Reference`.
        weak var run: TransactionRun?
    }

    /// A run, handed to other threads: by a transaction (for `cancel()` and `storeIdentifiers`), a
    /// finish hook, a timer.
    struct Reference: @unchecked Sendable {
        // @unchecked: a run's `transaction`, `configuration` and `isShared` are written only while
        // one thread owns it (creation, `configure`, its driver before it shares the run) and
        // otherwise only read; its state is touched under its lock, which only the driving thread
        // skips, and only while no other thread can reach the run.
        let run: TransactionRun
    }
}
