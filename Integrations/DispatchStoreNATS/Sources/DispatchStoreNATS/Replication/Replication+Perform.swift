public import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

extension Replication {
    /// Appends `action` to the stream, waits until this replica has applied it, and returns the
    /// result of applying it here with its sequence number (read-your-writes).
    ///
    /// The append is retried with the same message id when the stream does not acknowledge it
    /// (a leader being elected, a server lost), until the timeout: the stream stores it once.
    ///
    /// - Parameters:
    ///   - action: An action that a replicated store handles.
    ///   - timeout: How long to wait for the append and the application here; the configuration's
    ///     ``Configuration/timeout`` when `nil`.
    /// - Returns: The result of the `.sync` dispatch that applied it here, and its sequence number.
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/notReplicated`` when no replicated store
    ///   handles the action's type; ``ReplicationError/Code/timedOut`` when the stream did not
    ///   acknowledge it in time (it may still be stored: then every replica applies it) or this
    ///   replica did not apply it in time; ``ReplicationError/Code/unavailable`` for an append the
    ///   servers refused; ``ReplicationError/Code/cancelled`` when the task was cancelled;
    ///   ``ReplicationError/Code/stopped`` after ``close()`` or a failure.
    /// - Note: Thread-safe; any number of performs may wait at once (their appends are pipelined).
    ///   Never call it from the replica's thread (an observer, `onApply`): it would wait for itself.
    @discardableResult
    public func perform<Action: ActionType & Encodable>(
        _ action: Action,
        timeout: Duration? = nil
    ) async throws(ReplicationError) -> AppliedMessage {
        let deadline = ContinuousClock.now + (timeout ?? configuration.timeout)
        let (record, messageID) = try record(of: action)
        return try await append(record, messageID: messageID, deadline: deadline)
    }

    /// The record of `action` and its message id.
    ///
    /// Not inlined, as the rest of a perform's work outside its waits: what it holds stays on the
    /// thread's stack, not in the perform's async frame, which the task allocates per perform.
    @inline(never)
    private func record<Action: ActionType & Encodable>(
        of action: Action
    ) throws(ReplicationError) -> (Data, String) {
        let stream = configuration.stream
        guard let stores = storesByActionType[ObjectIdentifier(Action.self)] else {
            throw ReplicationError(
                .notReplicated,
                stream: stream,
                message: "no replicated store of stream \(stream) handles \(Action.self), so \(action) cannot be "
                    + "performed through it; dispatch it to the dispatcher instead"
            )
        }
        let number = counter.withLock { counter in
            counter += 1
            return counter
        }
        do {
            let record = try ActionLog.record(
                of: action,
                id: number,
                mode: .sync,
                storeIdentifiers: stores,
                destination: "stream \(stream)"
            )
            return (record, "\(messagePrefix)\(number)")
        } catch {
            throw ReplicationError(.invalidSetup, stream: stream, message: error.message)
        }
    }

    /// Appends `record` as the message `messageID`, trying again with the same id while the stream
    /// does not acknowledge it, and returns once this replica applied it.
    ///
    /// What an attempt ended with is looked at by functions that are not inlined, so that this async
    /// frame holds little (one attempt's result, a pointer): the task's allocator then keeps it in the
    /// slab it has.
    private func append(
        _ record: Data,
        messageID: String,
        deadline: ContinuousClock.Instant
    ) async throws(ReplicationError) -> AppliedMessage {
        var delay = Duration.milliseconds(50)
        var first = true
        while true {
            let attempt = await applier.attempt(messageID, first: first, deadline: deadline) {
                publisher.send(
                    record,
                    to: configuration.subject,
                    messageID: messageID,
                    timeout: Self.attemptTimeout,
                    stream: configuration.stream
                )
            }
            first = false
            guard Self.mayPass(attempt) else {
                return try outcome(of: attempt, messageID: messageID)
            }
            // A leader being elected, a server lost, a connection moving: the same id again, which
            // the stream stores once.
            await Self.pause(for: delay, until: deadline)
            delay = min(delay * 2, .milliseconds(500))
        }
    }

    /// Sleeps for `delay`, or until `deadline` when that comes first (at once when cancelled).
    ///
    /// A function of its own: its frame is allocated only when an append is tried again.
    @inline(never)
    private static func pause(for delay: Duration, until deadline: ContinuousClock.Instant) async {
        try? await Task.sleep(for: min(delay, max(.zero, deadline - ContinuousClock.now)))
    }

    /// Whether an attempt ended with a failure of its append that may pass (a timeout, no
    /// responders, a JetStream or other error): the append is tried again.
    @inline(never)
    private static func mayPass(_ attempt: ApplierWaitResult) -> Bool {
        guard case .appendFailed(let error) = attempt else { return false }
        switch error.code {
        case .timeout, .noResponders, .jetStream, .other: return true
        default: return false
        }
    }

    /// What a perform returns, or throws, after an attempt that ended for good.
    @inline(never)
    private func outcome(of attempt: ApplierWaitResult, messageID: String) throws(ReplicationError) -> AppliedMessage {
        switch attempt {
        case .applied(let outcome):
            return outcome
        case .failed(let error):
            applier.forget(messageID)
            throw error
        case .reached:
            preconditionFailure("DispatchStoreNATS: an attempt of message \(messageID) ended as a sequence wait")
        case .appendFailed(let error):
            applier.forget(messageID)
            let stream = configuration.stream
            throw ReplicationError(
                error.code == .notPermitted ? .notPermitted : .unavailable,
                stream: stream,
                natsError: error,
                message: "message \(messageID) was refused by stream \(stream): \(clause(of: error))"
            )
        }
    }

    /// Waits until this replica has applied every message the stream held when it was called.
    ///
    /// The stream's end is what the server answering says: a server back from a pause may, for a
    /// moment, answer as the leader it was and report an older end (one before what this replica
    /// applied is asked for again, for up to five seconds). To wait for what another replica
    /// performed, pass its sequence number to ``waitUntilApplied(through:timeout:)``.
    ///
    /// - Parameter timeout: How long to wait, or `nil` for as long as it takes.
    /// - Returns: The sequence number of the stream's last message when it was called.
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/timedOut``,
    ///   ``ReplicationError/Code/unavailable`` when the stream's state cannot be read in time,
    ///   ``ReplicationError/Code/cancelled``, or the failure that stopped the replica.
    @discardableResult
    public func waitUntilCaughtUp(timeout: Duration? = nil) async throws(ReplicationError) -> UInt64 {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        let stream = configuration.stream
        // An end before what this replica applied is an answer from a server that does not know it
        // is no longer the stream's leader: asked again for a while, then not believed.
        let staleUntil = ContinuousClock.now + .seconds(5)
        var last: NATSError?
        while true {
            do {
                let end = try await connection.streamInfo(stream).lastSequence
                let applied = applier.applied
                if end >= applied || ContinuousClock.now >= staleUntil {
                    let target = max(end, applied)
                    try await applier.waitUntilApplied(through: target, deadline: deadline)
                    return target
                }
            } catch let error as NATSError {
                last = error
            } catch let error as ReplicationError {
                throw error
            } catch {
                preconditionFailure("DispatchStoreNATS: unexpected error \(error)")
            }
            if let failure = applier.failure { throw failure }
            if let deadline, ContinuousClock.now >= deadline {
                throw ReplicationError(
                    .unavailable,
                    stream: stream,
                    natsError: last,
                    message: "cannot learn where stream \(stream) ends: \(last.map { clause(of: $0) } ?? "no answer")"
                )
            }
            try? await Task.sleep(for: .milliseconds(100))
            if Task.isCancelled {
                throw ReplicationError(.cancelled, stream: stream, message: "waiting to catch up was cancelled")
            }
        }
    }

    /// Waits until this replica has applied the message `sequence` and every one before it: for
    /// reading here what another replica performed (its ``AppliedMessage/sequence``).
    ///
    /// - Parameters:
    ///   - sequence: A sequence number of the stream.
    ///   - timeout: How long to wait, or `nil` for as long as it takes.
    /// - Throws: ``ReplicationError``: ``ReplicationError/Code/timedOut``,
    ///   ``ReplicationError/Code/cancelled``, or the failure that stopped the replica.
    public func waitUntilApplied(through sequence: UInt64, timeout: Duration? = nil) async throws(ReplicationError) {
        try await applier.waitUntilApplied(through: sequence, deadline: timeout.map { ContinuousClock.now + $0 })
    }
}
