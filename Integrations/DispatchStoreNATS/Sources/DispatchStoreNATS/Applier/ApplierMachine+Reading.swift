import Foundation

extension ApplierMachine {
    /// What the driver thread does next.
    enum Work: Equatable {
        /// The replica stopped: the thread ends.
        case stop
        /// Apply or skip the messages delivered meanwhile.
        case deliver
        /// Open a reader of the stream from `from`, whose deliveries carry `generation`.
        case open(from: UInt64, generation: Int)
        /// Nothing came for a while: ask the stream where it ends (off the thread), then feed the
        /// answer to ``streamEndChecked(_:now:)``.
        case checkEnd
        /// Sleep until a delivery, a stop, or `until` (for ever when `nil`).
        case wait(until: ContinuousClock.Instant?)
    }

    /// What to do with a delivered message.
    enum Delivery: Equatable {
        /// Apply it: it is the next one.
        case apply
        /// Skip it: a repeat, or a delivery of a reader replaced since.
        case skip
        /// Messages are missing before it, from `expected` on: fill the gap (read them again, or
        /// load a snapshot covering them) before anything else.
        case gap(expected: UInt64)
    }

    /// What the driver thread does next, given whether deliveries wait.
    mutating func nextWork(now: ContinuousClock.Instant, hasDeliveries: Bool) -> Work {
        if hasStopped { return .stop }
        if hasDeliveries, case .reading = reader { return .deliver }
        switch reader {
        case .due(let from, let at):
            guard now >= at else { return .wait(until: at) }
            generation += 1
            reader = .opening(from: from)
            return .open(from: from, generation: generation)
        case .opening:
            preconditionFailure("DispatchStoreNATS: the applier's driver asked for work while opening a reader")
        case .reading:
            if checkingEnd { return .wait(until: nil) }
            let quietUntil = lastHeard + quietCheck
            guard now >= quietUntil else { return .wait(until: quietUntil) }
            checkingEnd = true
            return .checkEnd
        case .closed:
            return .stop
        }
    }

    /// The reader asked for is open.
    mutating func readerOpened(now: ContinuousClock.Instant) {
        guard case .opening = reader else { return }
        reader = .reading(generation: generation)
        lastHeard = now
        openFailures = 0
    }

    /// The reader asked for could not be opened (or one reading was lost) for a reason that may pass:
    /// it is opened again, from the message after the last applied, a little later (0.1 s, then
    /// twice as long each time, up to 2 s).
    mutating func readerFailed(now: ContinuousClock.Instant) {
        guard !hasStopped else { return }
        openFailures += 1
        let delay = Duration.milliseconds(100 * (1 << min(openFailures - 1, 5)))
        reader = .due(from: applied + 1, at: now + min(delay, .seconds(2)))
    }

    /// The reader of `generation` delivered the message `sequence`, after which the stream holds
    /// `pending` more it has not delivered yet.
    mutating func delivered(
        sequence: UInt64,
        pending: UInt64,
        generation delivery: Int,
        now: ContinuousClock.Instant
    ) -> (Delivery, Resumption?) {
        guard case .reading(let current) = reader, current == delivery else { return (.skip, nil) }
        lastHeard = now
        streamEnd = max(streamEnd, sequence + pending)
        if sequence <= applied {
            repeatsSkipped += 1
            guard let reread = rereadWait, reread.through == sequence else { return (.skip, nil) }
            rereadWait = nil
            return (.skip, Resumption(waiter: reread.waiter, result: .reached(sequence)))
        }
        if sequence > applied + 1 { return (.gap(expected: applied + 1), nil) }
        return (.apply, nil)
    }

    /// Whether the replica that applied the message `sequence` writes a snapshot after it.
    ///
    /// The one that appended it does, every `snapshotEvery` messages: decided from the stream
    /// alone, so that one replica writes each snapshot without talking to the others.
    static func snapshotIsDue(after sequence: UInt64, isOwn: Bool, every snapshotEvery: Int?) -> Bool {
        guard isOwn, let snapshotEvery else { return false }
        return sequence % UInt64(snapshotEvery) == 0
    }

    /// A delivery says the stream holds messages up to `streamEnd`, before the driver applies it.
    ///
    /// - Returns: Whether that is more than was known.
    mutating func heard(streamEnd end: UInt64) -> Bool {
        guard end > streamEnd else { return false }
        streamEnd = end
        return true
    }

    /// The message `sequence` was applied here with `outcome`.
    ///
    /// - Parameters:
    ///   - sequence: The message's sequence number: the one after the last applied.
    ///   - ownMessageID: The message's id when this replica appended it.
    ///   - outcome: What applying it gave.
    ///   - now: The time.
    /// - Returns: The perform waiting for it, if one waits, and the waits for sequence numbers it
    ///   reached.
    mutating func applied(
        sequence: UInt64,
        ownMessageID: String?,
        outcome: Replication.AppliedMessage,
        now: ContinuousClock.Instant
    ) -> [Resumption] {
        precondition(sequence == applied + 1, "DispatchStoreNATS: message \(sequence) applied after \(applied)")
        applied = sequence
        appliedCount += 1
        lastApplied = now
        lastHeard = now
        streamEnd = max(streamEnd, sequence)
        var resumptions: [Resumption] = []
        if let id = ownMessageID, let perform = performs[id] {
            switch perform {
            case .expected(let acknowledged?), .waiting(let acknowledged?, _, _):
                if acknowledged != sequence {
                    // Acknowledged as one number, delivered as another: two copies of the stream.
                    let error = diverge(id, acknowledged: acknowledged, applied: sequence)
                    return fail(error)
                }
                fallthrough
            case .expected, .waiting:
                if case .waiting(_, _, let waiter) = perform {
                    performs[id] = nil
                    resumptions.append(Resumption(waiter: waiter, result: .applied(outcome)))
                } else {
                    performs[id] = .applied(outcome)
                }
            case .applied:
                break
            }
        }
        resumptions += takeReached()
        return resumptions
    }

    /// The message `sequence` was skipped, applied by no store: it is not a record (a message
    /// someone else appended), which every replica decides alike from the message alone.
    mutating func skippedUnreadable(sequence: UInt64, now: ContinuousClock.Instant) -> [Resumption] {
        precondition(sequence == applied + 1, "DispatchStoreNATS: message \(sequence) skipped after \(applied)")
        applied = sequence
        unreadableSkipped += 1
        lastHeard = now
        streamEnd = max(streamEnd, sequence)
        return takeReached()
    }

    /// The messages from `sequence` on are to be read again (a gap the stream can fill, or the
    /// tests' redelivery): a new reader opens from there.
    mutating func readAgain(from sequence: UInt64, now: ContinuousClock.Instant) {
        guard !hasStopped else { return }
        reader = .due(from: sequence, at: now)
    }

    /// The tests' redelivery: reads the stream again from `sequence`; `waiter` is resumed once the
    /// last message applied is delivered again, or at once (the result) when there is none to wait for.
    mutating func requestRereading(from sequence: UInt64, waiter: Waiter, now: ContinuousClock.Instant) -> Resumption? {
        guard !hasStopped else { return Resumption(waiter: waiter, result: .reached(applied)) }
        reader = .due(from: sequence, at: now)
        guard sequence <= applied, rereadWait == nil else {
            return Resumption(waiter: waiter, result: .reached(applied))
        }
        rereadWait = (applied, waiter)
        return nil
    }

    /// A snapshot covering the messages up to `sequence` was loaded after a gap: the stores hold
    /// them, and reading goes on after it.
    mutating func snapshotLoaded(sequence: UInt64, now: ContinuousClock.Instant) -> [Resumption] {
        precondition(sequence > applied, "DispatchStoreNATS: snapshot \(sequence) loaded after message \(applied)")
        applied = sequence
        coveredThrough = sequence
        snapshotsLoaded += 1
        lastApplied = now
        lastHeard = now
        streamEnd = max(streamEnd, sequence)
        reader = .due(from: sequence + 1, at: now)
        var resumptions: [Resumption] = []
        for (id, perform) in performs {
            if case .waiting(let stored?, _, let waiter) = perform, stored <= sequence {
                performs[id] = nil
                resumptions.append(Resumption(waiter: waiter, result: .failed(covered(id, stored))))
            }
        }
        if let reread = rereadWait {
            rereadWait = nil
            resumptions.append(Resumption(waiter: reread.waiter, result: .reached(sequence)))
        }
        return resumptions + takeReached()
    }

    /// The stream's end, asked after a quiet while, is `end` (`nil`: no answer).
    ///
    /// When it holds messages this replica has not applied, the reader, silent meanwhile, is
    /// opened again from the first of them.
    ///
    /// nats.c makes an ordered consumer again when its heartbeats stop, but a consumer made on a
    /// server back from a pause was seen to send heartbeats and no message; this does not depend
    /// on it.
    mutating func streamEndChecked(_ end: UInt64?, now: ContinuousClock.Instant) {
        checkingEnd = false
        lastHeard = now
        guard let end, !hasStopped else { return }
        streamEnd = max(streamEnd, end)
        if end > applied, case .reading = reader {
            quietChecksThatRestarted += 1
            reader = .due(from: applied + 1, at: now)
        }
    }
}
