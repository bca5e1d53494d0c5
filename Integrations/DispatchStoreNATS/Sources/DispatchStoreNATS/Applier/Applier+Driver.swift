import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

extension Applier {
    /// The driver thread: asks the machine what to do, does it, and sleeps when there is nothing.
    func drive() {
        defer {
            reader?.close()
            reader = nil
            driverEnded()
        }
        while true {
            let work = lock.withLock { () -> ApplierMachine<Waiter>.Work in
                while true {
                    let work = machine.nextWork(now: .now, hasDeliveries: !inbox.isEmpty)
                    guard case .wait(let until) = work else { return work }
                    lock.wait(until: until)
                }
            }
            switch work {
            case .stop:
                return
            case .deliver:
                deliverInbox()
            case .open(let from, let generation):
                open(from: from, generation: generation)
            case .checkEnd:
                checkEnd()
            case .wait:
                preconditionFailure("DispatchStoreNATS: the applier's driver was handed a wait")
            }
        }
    }

    // MARK: Reading

    /// Opens a reader from `sequence` (closing the one before), or leaves it to a later turn when the
    /// servers cannot make one now.
    private func open(from sequence: UInt64, generation: Int) {
        reader?.close()
        reader = nil
        // Deliveries of the reader just closed that wait for room give up.
        lock.withLock { lock.broadcast() }
        do {
            reader = try makeReader(from: sequence, generation: generation)
            lock.withLock { machine.readerOpened(now: .now) }
        } catch  where error.isTransient || error.code == .connectionClosed && !context.connection.handle.isClosed {
            lock.withLock { machine.readerFailed(now: .now) }
        } catch {
            fail(unavailable(error, "cannot read stream \(context.stream) from message \(sequence)"))
        }
    }

    /// Asks the stream where it ends, off the thread; the answer goes to the machine.
    private func checkEnd() {
        let context = context
        Task { [self] in
            let end = try? await context.connection.streamInfo(context.stream).lastSequence
            lock.withLock {
                machine.streamEndChecked(end, now: .now)
                lock.broadcast()
            }
        }
    }

    /// Applies, or skips, the messages delivered meanwhile, in order.
    private func deliverInbox() {
        var batch = spareInbox
        spareInbox = []
        lock.withLock {
            swap(&inbox, &batch)
            // Deliveries waiting for room go on.
            if batch.count >= Self.inboxLimit { lock.broadcast() }
        }
        defer {
            batch.removeAll(keepingCapacity: true)
            spareInbox = batch
        }
        for (message, generation) in batch {
            let (delivery, reread) = lock.withLock {
                machine.delivered(
                    sequence: message.sequence,
                    pending: message.pending,
                    generation: generation,
                    now: .now
                )
            }
            resume(reread)
            do throws(ReplicationError) {
                switch delivery {
                case .skip:
                    continue
                case .gap(let expected):
                    try fillGap(from: expected, found: message.sequence)
                case .apply:
                    try apply(message)
                }
            } catch {
                fail(error)
                return
            }
        }
    }

    // MARK: Applying

    /// Applies `message`, the next one, with a `.sync` dispatch, then tells the machine.
    private func apply(_ message: DeliveredMessage) throws(ReplicationError) {
        guard let entry = try decode(message) else {
            resume(lock.withLock { machine.skippedUnreadable(sequence: message.sequence, now: .now) })
            return
        }
        let result = dispatch(entry.action)
        try check(result, sequence: message.sequence)
        let ownID = message.messageID.flatMap { $0.hasPrefix(context.ownPrefix) ? $0 : nil }
        // Before anyone hears of the message: a perform that returns finds its snapshot under way.
        if ApplierMachine<Waiter>.snapshotIsDue(
            after: message.sequence,
            isOwn: ownID != nil,
            every: context.snapshotEvery
        ) {
            takeSnapshot(at: message.sequence)
        }
        let outcome = Replication.AppliedMessage(
            sequence: message.sequence,
            result: result,
            messageID: message.messageID,
            isOwn: ownID != nil,
            storedAt: Date(timeIntervalSince1970: Double(message.timestamp) / 1e9)
        )
        // Before the waiting tasks hear of the message: once a wait for it ends, so did this call.
        context.onApply?(outcome)
        feed { machine in
            let resumptions = machine.applied(
                sequence: message.sequence,
                ownMessageID: ownID,
                outcome: outcome,
                now: .now
            )
            if machine.reportsLag { publishLag(machine.lag(now: .now)) }
            return resumptions
        }
    }

    /// The entry `message` holds, or `nil` when it is not a record at all: appended by something
    /// other than a replica, it is skipped and reported, as every replica decides from the message
    /// alone.
    ///
    /// - Throws: ``ReplicationError/Code/unreadableMessage`` for a record this program cannot apply
    ///   (an action type it does not know, a payload that does not decode): a newer program may
    ///   have written it, so the replica stops before it rather than skip what others apply.
    private func decode(_ message: DeliveredMessage) throws(ReplicationError) -> ActionLog.Entry? {
        let failure: ActionLogError
        do {
            return try decoder.entry(from: message.data, number: Int(message.sequence))
        } catch {
            failure = error
        }
        // A decoder that knows no type tells a record from something else.
        var anyRecord = try? ActionLog.RecordDecoder(actionTypes: [], source: "stream \(context.stream)")
        do {
            _ = try anyRecord?.entry(from: message.data, number: Int(message.sequence))
        } catch  where error.code == .unknownActionType {
            throw ReplicationError(
                .unreadableMessage,
                stream: context.stream,
                sequence: message.sequence,
                message: "message \(message.sequence) of stream \(context.stream) cannot be applied: "
                    + "\(clause(failure.message)); this replica stopped before it rather than skip it (a newer "
                    + "program may apply it)"
            )
        } catch {}
        context.onError?(
            ReplicationError(
                .unreadableMessage,
                stream: context.stream,
                sequence: message.sequence,
                message: "message \(message.sequence) of stream \(context.stream)"
                    + (message.messageID.map { " (id \($0))" } ?? "") + " is not a record of an action: "
                    + "\(clause(failure.message)); every replica skips it"
            )
        )
        return nil
    }

    /// Dispatches `action` `.sync`, admitted by the guard, and returns its result.
    private func dispatch(_ action: any ActionType) -> DispatchResult {
        func open<Action: ActionType>(_ action: Action) {
            context.guardian.admit(Action.self)
            defer { context.guardian.endAdmission() }
            context.dispatcher.dispatch(action, mode: .sync) { [unowned self] result in lastResult = result }
        }
        open(action)
        // `.sync` runs the completion before `dispatch` returns (this thread waits for it).
        defer { lastResult = nil }
        return lastResult!
    }

    /// Stops the replica when a replicated store did not apply the message: it would no longer hold
    /// what the other replicas hold.
    private func check(_ result: DispatchResult, sequence: UInt64) throws(ReplicationError) {
        if let error = result.error {
            throw ReplicationError(
                .stopped,
                stream: context.stream,
                sequence: sequence,
                message:
                    "message \(sequence) of stream \(context.stream) could not be applied: \(clause(error.message)); "
                    + "this replica stopped"
            )
        }
        for outcome in result.outcomes where context.replicated.contains(outcome.storeIdentifier) {
            if outcome.sequenceNumber == nil {
                throw ReplicationError(
                    .stopped,
                    stream: context.stream,
                    storeIdentifier: outcome.storeIdentifier,
                    sequence: sequence,
                    message: "store '\(outcome.storeIdentifier)' did not apply message \(sequence) of stream "
                        + "\(context.stream) (\(outcome.status)); this replica stopped, since its state would differ "
                        + "from the other replicas'"
                )
            }
        }
    }

    /// Writes a snapshot of the replicated stores after the message `sequence`, off this thread.
    private func takeSnapshot(at sequence: UInt64) {
        guard let snapshotWriter, let snapshots = context.snapshots else { return }
        do {
            let data = try Journal.encodeSnapshot(
                of: context.dispatcher,
                storeIdentifiers: context.replicated,
                position: sequence,
                destination: snapshots.name(sequence)
            )
            snapshotWriter.submit(data, sequence: sequence)
        } catch {
            context.onError?(
                ReplicationError(
                    .snapshot,
                    stream: context.stream,
                    storeIdentifier: error.storeIdentifier,
                    sequence: sequence,
                    message: "no snapshot was taken after message \(sequence): \(clause(error.message))"
                )
            )
        }
    }
}
