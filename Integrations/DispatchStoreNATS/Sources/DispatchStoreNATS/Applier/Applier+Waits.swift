import DispatchStore
import Foundation

extension Applier {
    /// Runs one attempt of a perform: registers the wait, calls `send` (which publishes the
    /// message) unless the stream stored it already, and returns what ends the attempt.
    ///
    /// - Returns: ``ApplierWaitResult/applied(_:)`` with its outcome once the message is applied
    ///   here; ``ApplierWaitResult/appendFailed(_:)`` when the stream did not take this append (the
    ///   perform tries again); ``ApplierWaitResult/failed(_:)`` at `deadline`, on cancellation, or
    ///   with the applier's failure.
    func attempt(
        _ messageID: String,
        first: Bool,
        deadline: ContinuousClock.Instant,
        send: () -> Void
    ) async -> ApplierWaitResult {
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (waiter: Waiter) in
                beginAttempt(messageID, first: first, deadline: deadline, waiter: waiter, send: send)
            }
        } onCancel: {
            resume(lock.withLock { machine.cancelAttempt(messageID) })
        }
    }

    /// Registers the wait of an attempt and sends its message, or resumes `waiter` at once.
    ///
    /// Not inlined: what it holds stays on the thread's stack, out of the perform's async frame.
    @inline(never)
    private func beginAttempt(
        _ messageID: String,
        first: Bool,
        deadline: ContinuousClock.Instant,
        waiter: Waiter,
        send: () -> Void
    ) {
        // Checked under the lock that the cancellation handler takes: none is missed.
        let start = lock.withLock {
            let start = machine.beginAttempt(
                messageID,
                first: first,
                deadline: deadline,
                waiter: waiter,
                isCancelled: Task.isCancelled
            )
            switch start {
            case .send(let timer), .wait(let timer): setTimer(timer)
            case .resume: break
            }
            return start
        }
        switch start {
        case .send: send()
        case .wait: break
        case .resume(let result): waiter.resume(returning: result)
        }
    }

    /// Hears of the stream's acknowledgement of a perform's append, or of its failure.
    func acknowledged(_ messageID: String, _ result: Result<PublishAck, NATSError>) {
        feed { $0.acknowledged(messageID, result.map(\.sequence)) }
    }

    /// Forgets a registered message id: its perform gave up.
    func forget(_ messageID: String) {
        lock.withLock { machine.forget(messageID) }
    }

    /// Waits until the message `target` (and every one before it) is applied here.
    ///
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/timedOut`` at `deadline`,
    ///   ``ReplicationError/Code/cancelled``, or the applier's failure.
    func waitUntilApplied(through target: UInt64, deadline: ContinuousClock.Instant?) async throws(ReplicationError) {
        let id = Locked<UInt64?>(nil)
        let result = await withTaskCancellationHandler {
            await withUnsafeContinuation { (waiter: Waiter) in
                let immediate = lock.withLock { () -> ApplierWaitResult? in
                    switch machine.beginSequenceWait(
                        through: target,
                        deadline: deadline,
                        waiter: waiter,
                        isCancelled: Task.isCancelled
                    ) {
                    case .waiting(let waitID, let timer):
                        id.withLock { $0 = waitID }
                        setTimer(timer)
                        return nil
                    case .resume(let result):
                        return result
                    }
                }
                if let immediate { waiter.resume(returning: immediate) }
            }
        } onCancel: {
            resume(
                lock.withLock { () -> ApplierMachine<Waiter>.Resumption? in
                    guard let waitID = id.withLock({ $0 }) else { return nil }
                    return machine.cancelSequenceWait(waitID)
                }
            )
        }
        if case .failed(let error) = result { throw error }
    }

    /// Reads the stream again from `sequence`, as after a reconnect that delivers messages again (the
    /// tests' redelivery), and returns once the messages applied before were delivered again (and
    /// skipped); at once when there are none.
    func readAgain(from sequence: UInt64) async {
        _ = await withUnsafeContinuation { (waiter: Waiter) in
            let immediate = lock.withLock {
                let immediate = machine.requestRereading(from: sequence, waiter: waiter, now: .now)
                lock.broadcast()
                return immediate
            }
            resume(immediate)
        }
    }

    // MARK: Lag

    /// The replica's lag now, then each time it changes, keeping only the newest for a slow reader;
    /// it ends when the replica stops.
    func lagUpdates() -> AsyncStream<Replication.Lag> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Replication.Lag.self,
            bufferingPolicy: .bufferingNewest(1)
        )
        let (id, lag, stopped) = lock.withLock { () -> (UInt64, Replication.Lag, Bool) in
            nextListener += 1
            if !machine.hasStopped {
                lagListeners[nextListener] = continuation
                machine.reportsLag = true
            }
            return (nextListener, machine.lag(now: .now), machine.hasStopped)
        }
        continuation.yield(lag)
        if stopped {
            continuation.finish()
        } else {
            continuation.onTermination = { [weak self] _ in
                guard let self else { return }
                lock.withLock {
                    lagListeners[id] = nil
                    machine.reportsLag = !lagListeners.isEmpty
                }
            }
        }
        return stream
    }

    /// Tells the listeners the lag now.
    ///
    /// Call it holding the lock, so that they hear of the changes in the order they were made (a
    /// yield only buffers the value).
    func publishLag(_ lag: Replication.Lag) {
        for listener in lagListeners.values {
            listener.yield(lag)
        }
    }

    /// Ends every lag listener's sequence.
    func endLagListeners() {
        let listeners = lock.withLock {
            defer {
                lagListeners = [:]
                machine.reportsLag = false
            }
            return Array(lagListeners.values)
        }
        for listener in listeners {
            listener.finish()
        }
    }
}
