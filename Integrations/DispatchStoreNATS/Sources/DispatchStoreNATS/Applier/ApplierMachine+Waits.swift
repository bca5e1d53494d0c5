import Foundation

extension ApplierMachine {
    /// How an attempt of a perform begins.
    enum AttemptStart {
        /// Send the message; set the timer for `timer` first, when there is one.
        case send(timer: ContinuousClock.Instant?)
        /// Wait without sending: the stream stored the message already (a later attempt whose
        /// earlier one was acknowledged); set the timer for `timer` first, when there is one.
        case wait(timer: ContinuousClock.Instant?)
        /// The attempt is over before it began.
        case resume(WaitResult)
    }

    /// How a wait for a sequence number begins.
    enum SequenceWaitStart {
        /// It waits, under `id`; set the timer for `timer` first, when there is one.
        case waiting(id: UInt64, timer: ContinuousClock.Instant?)
        /// It is over before it began.
        case resume(WaitResult)
    }

    // MARK: Performs

    /// Begins an attempt of the perform of `messageID`, whose waiter is `waiter`.
    ///
    /// The first attempt registers the message id, before the message is sent, so that its outcome
    /// is kept when it is applied before a later attempt asks for it.
    mutating func beginAttempt(
        _ messageID: String,
        first: Bool,
        deadline: ContinuousClock.Instant,
        waiter: Waiter,
        isCancelled: Bool
    ) -> AttemptStart {
        let perform = performs[messageID] ?? (first ? .expected(sequence: nil) : nil)
        switch perform {
        case .applied(let outcome):
            performs[messageID] = nil
            return .resume(.applied(outcome))
        case .expected(let sequence) where !hasStopped:
            if isCancelled {
                performs[messageID] = nil
                return .resume(.failed(cancelled(messageID, sequence)))
            }
            if let sequence, sequence <= applied {
                // Stored, and applied here since without this replica seeing it: covered by a
                // snapshot loaded after a gap, or read from a server whose copy of the stream differs.
                performs[messageID] = nil
                guard sequence <= coveredThrough else {
                    return .resume(.failed(diverge(messageID, acknowledged: sequence)))
                }
                return .resume(.failed(covered(messageID, sequence)))
            }
            performs[messageID] = .waiting(sequence: sequence, deadline: deadline, waiter: waiter)
            let timer = arm(deadline)
            return sequence == nil ? .send(timer: timer) : .wait(timer: timer)
        case .waiting:
            preconditionFailure("DispatchStoreNATS: two attempts of message \(messageID) wait at once")
        default:
            performs[messageID] = nil
            return .resume(.failed(stopError))
        }
    }

    /// The stream acknowledged the message `messageID` at `sequence`, or refused it (or its
    /// acknowledgement did not come in time).
    mutating func acknowledged(_ messageID: String, _ result: Result<UInt64, NATSError>) -> [Resumption] {
        if case .success(let sequence) = result {
            streamEnd = max(streamEnd, sequence)
        }
        switch (performs[messageID], result) {
        case (.expected?, .success(let sequence)):
            performs[messageID] = .expected(sequence: sequence)
        case (.waiting(_, let deadline, let waiter)?, .success(let sequence)):
            guard sequence <= applied else {
                performs[messageID] = .waiting(sequence: sequence, deadline: deadline, waiter: waiter)
                return []
            }
            performs[messageID] = nil
            // Applied, but not by a dispatch here that saw it: a snapshot loaded after a gap covered
            // it, or the server this replica reads holds another copy of the stream.
            guard sequence <= coveredThrough else {
                let error = diverge(messageID, acknowledged: sequence)
                return [Resumption(waiter: waiter, result: .failed(error))] + fail(error)
            }
            return [Resumption(waiter: waiter, result: .failed(covered(messageID, sequence)))]
        case (.waiting(nil, _, let waiter)?, .failure(let error)):
            performs[messageID] = .expected(sequence: nil)
            return [Resumption(waiter: waiter, result: .appendFailed(error))]
        default:
            // A failure after the stream stored the message (an earlier send's), or no perform.
            break
        }
        return []
    }

    /// The task of the attempt of `messageID` was cancelled.
    mutating func cancelAttempt(_ messageID: String) -> Resumption? {
        guard case .waiting(let sequence, _, let waiter) = performs[messageID] else { return nil }
        performs[messageID] = nil
        return Resumption(waiter: waiter, result: .failed(cancelled(messageID, sequence)))
    }

    /// Forgets the perform of `messageID`: it gave up.
    mutating func forget(_ messageID: String) {
        performs[messageID] = nil
    }

    // MARK: Sequence numbers

    /// Begins a wait until the message `target`, and every one before it, is applied.
    mutating func beginSequenceWait(
        through target: UInt64,
        deadline: ContinuousClock.Instant?,
        waiter: Waiter,
        isCancelled: Bool
    ) -> SequenceWaitStart {
        if applied >= target { return .resume(.reached(applied)) }
        if hasStopped { return .resume(.failed(stopError)) }
        if isCancelled { return .resume(.failed(cancelled(target))) }
        nextWaitID += 1
        sequenceWaits[nextWaitID] = SequenceWait(target: target, deadline: deadline, waiter: waiter)
        return .waiting(id: nextWaitID, timer: deadline.flatMap { arm($0) })
    }

    /// The task of the wait `id` was cancelled.
    mutating func cancelSequenceWait(_ id: UInt64) -> Resumption? {
        guard let wait = sequenceWaits.removeValue(forKey: id) else { return nil }
        return Resumption(waiter: wait.waiter, result: .failed(cancelled(wait.target)))
    }

    /// The waits for sequence numbers up to ``applied``, removed.
    mutating func takeReached() -> [Resumption] {
        guard !sequenceWaits.isEmpty else { return [] }
        var reached: [Resumption] = []
        for (id, wait) in sequenceWaits where wait.target <= applied {
            reached.append(Resumption(waiter: wait.waiter, result: .reached(applied)))
            sequenceWaits[id] = nil
        }
        return reached
    }

    // MARK: Deadlines

    /// Sets the timer for `deadline` when it comes before the one set.
    ///
    /// - Returns: The new time for the timer, or `nil` when it stays as it is.
    private mutating func arm(_ deadline: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        if let timerDeadline, timerDeadline <= deadline { return nil }
        timerDeadline = deadline
        return deadline
    }

    /// The timer fired at `now`: the waits whose deadline passed end with
    /// ``ReplicationError/Code/timedOut``.
    ///
    /// - Parameters:
    ///   - now: The time.
    ///   - connection: The connection's state, for the errors: `connected to nats://...`.
    /// - Returns: The waiters to resume, and when the timer should fire next, if ever.
    mutating func expire(
        now: ContinuousClock.Instant,
        connection: String
    ) -> (resumptions: [Resumption], timer: ContinuousClock.Instant?) {
        var resumptions: [Resumption] = []
        var next: ContinuousClock.Instant?
        for (id, perform) in performs {
            guard case .waiting(let sequence, let deadline, let waiter) = perform else { continue }
            guard deadline <= now else {
                next = min(next ?? deadline, deadline)
                continue
            }
            performs[id] = nil
            resumptions.append(
                Resumption(waiter: waiter, result: .failed(timedOut(id, sequence, connection: connection)))
            )
        }
        for (id, wait) in sequenceWaits {
            guard let deadline = wait.deadline else { continue }
            guard deadline <= now else {
                next = min(next ?? deadline, deadline)
                continue
            }
            sequenceWaits[id] = nil
            resumptions.append(
                Resumption(
                    waiter: wait.waiter,
                    result: .failed(
                        ReplicationError(
                            .timedOut,
                            stream: stream,
                            sequence: wait.target,
                            message: "this replica had applied stream \(stream) up to message \(applied), not yet "
                                + "\(wait.target), when the time ran out"
                        )
                    )
                )
            )
        }
        timerDeadline = next
        return (resumptions, next)
    }

    // MARK: Errors

    private func timedOut(_ messageID: String, _ sequence: UInt64?, connection: String) -> ReplicationError {
        let message =
            sequence.map { sequence in
                "message \(messageID) was stored as number \(sequence) of stream \(stream) but not applied here in "
                    + "time (this replica has applied up to \(applied)); every replica, this one included, applies "
                    + "it when it gets there"
            }
            ?? "message \(messageID) was not acknowledged by stream \(stream) in time (connection: \(connection)); it "
            + "may still be stored, and then every replica applies it"
        return ReplicationError(.timedOut, stream: stream, sequence: sequence, message: message)
    }

    private func cancelled(_ target: UInt64) -> ReplicationError {
        ReplicationError(
            .cancelled,
            stream: stream,
            sequence: target,
            message: "the task waiting for message \(target) of stream \(stream) to be applied was cancelled"
        )
    }

    private func cancelled(_ messageID: String, _ sequence: UInt64?) -> ReplicationError {
        guard let sequence else {
            return ReplicationError(
                .cancelled,
                stream: stream,
                message: "the task performing message \(messageID) was cancelled before stream \(stream) "
                    + "acknowledged it; it may still be stored, and then every replica applies it"
            )
        }
        return ReplicationError(
            .cancelled,
            stream: stream,
            sequence: sequence,
            message: "the task waiting for message \(messageID) (number \(sequence) of stream \(stream)) to be "
                + "applied was cancelled; the message is in the stream, and every replica applies it"
        )
    }

    /// The error of a replica that applied another message than the one the stream acknowledged.
    ///
    /// It applied another message as number `acknowledged` (or this one as `applied`): its server's
    /// copy of the stream differs from the one that acknowledged it. The replica stops with it.
    mutating func diverge(
        _ messageID: String,
        acknowledged: UInt64,
        applied appliedAt: UInt64? = nil
    ) -> ReplicationError {
        let seen =
            appliedAt.map { "this replica applied it as number \($0)" }
            ?? "this replica applied another message as that number"
        let error = ReplicationError(
            .diverged,
            stream: stream,
            sequence: acknowledged,
            message: "the servers of stream \(stream) disagree: message \(messageID) was acknowledged as number "
                + "\(acknowledged), but \(seen), from the server it reads; this replica stopped rather than hold "
                + "a state the others do not (nats-server 2.9 was seen to do this after a kill -9 of a stream's "
                + "leader: run a newer server)"
        )
        return error
    }

    func covered(_ messageID: String, _ sequence: UInt64) -> ReplicationError {
        ReplicationError(
            .stopped,
            stream: stream,
            sequence: sequence,
            message: "message \(messageID) (number \(sequence) of stream \(stream)) was applied here through "
                + "a snapshot loaded after a gap, so its result is not known"
        )
    }
}
