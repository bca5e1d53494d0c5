public import DispatchStore

extension ActionLog {
    /// What a replay did, and every way in which it did not reproduce the logged run.
    public struct ReplayReport: Sendable, CustomStringConvertible {
        /// How many logged transactions were applied to their stores.
        public let replayed: Int
        /// The torn tail, skipped.
        public let tornTail: TornTail?
        /// The lines whose replayed transaction did not end as logged: a store that finished
        /// normally then was cancelled or failed now, or the other way round.
        public let mismatchedLines: [Int]
        /// Where the replay did not reproduce the run, first problem first, each naming the store and
        /// the line: ``ActionLogError/Code/sequenceGap``, ``ActionLogError/Code/duplicateSequenceNumber``,
        /// ``ActionLogError/Code/outcomeMismatch``, ``ActionLogError/Code/checksumMismatch`` and
        /// ``ActionLogError/Code/unknownStore``.
        public let divergences: [ActionLogError]
        /// How many state checksums in the log matched the replayed states.
        public let checksumsVerified: Int

        /// The number of the last line when it was cut short (a crash while writing it) and skipped.
        public var truncatedLine: Int? {
            tornTail?.line
        }

        /// Whether every store got every logged action in its own logged order, each ended as
        /// logged, and every checksum in the log matched.
        ///
        /// States can still differ without it being detected when the log holds no checksum for
        /// them (see ``ActionLogMiddleware`` `checksumEvery`).
        public var succeeded: Bool {
            divergences.isEmpty && mismatchedLines.isEmpty
        }

        /// A line such as `replayed 1200 transactions; 12 checksums matched; skipped torn line 1201`.
        public var description: String {
            var text = "replayed \(replayed) transaction\(replayed == 1 ? "" : "s")"
            if checksumsVerified > 0 {
                text += "; \(checksumsVerified) checksum\(checksumsVerified == 1 ? "" : "s") matched"
            }
            if let tornTail { text += "; skipped truncated \(tornTail)" }
            if !mismatchedLines.isEmpty {
                text += "; \(mismatchedLines.count) did not end as logged (lines "
                text += mismatchedLines.prefix(10).map(String.init).joined(separator: ", ")
                text += mismatchedLines.count > 10 ? ", ...)" : ")"
            }
            if let first = divergences.first {
                text +=
                    "; DIVERGED (\(divergences.count) problem\(divergences.count == 1 ? "" : "s")): \(first.message)"
            }
            return text
        }
    }

    /// Replays a log into a dispatcher, giving every store its logged actions in the order it
    /// applied them, and returns once the last one has finished.
    ///
    /// Give it a dispatcher with the same stores (identifiers, reducers, initial states) as the one
    /// that wrote the log. Each line carries, for every store that applied its action, the number
    /// the store gave it (``DispatchStore/Store/sequenceNumber``); the replay gives each store its actions in that
    /// order, with ``DispatchStore/DispatchMode/sync``, holding back a line that comes before its turn (concurrent
    /// transactions finish, and so are written, in another order than they were applied). A line
    /// whose stores all expect it now, and that a plain dispatch routes to exactly those stores, is
    /// dispatched once, so that `waitsFor` orders it as it did live; any other goes to each store
    /// alone (`to:`), in the logged order.
    ///
    /// What this reproduces exactly: each store's state, when its reducer depends only on its own
    /// state and the action. What it cannot: a reducer that reads another store's state, when
    /// concurrent transactions interleaved differently than the replay does, and changes made with
    /// `updateState` outside any action, which the log does not hold. Checksums recorded by the
    /// log (``ActionLogMiddleware`` `checksumEvery`, and the checkpoint it writes when closed) catch
    /// both: a mismatch is reported, naming the store and the line.
    ///
    /// The report lists every divergence. A store stops, applying nothing more, at a missing
    /// number (a lost line), a number given twice, or an action it does not apply as logged.
    ///
    /// - Parameters:
    ///   - path: The log file.
    ///   - dispatcher: The dispatcher to replay into; nothing else should dispatch to its stores
    ///     meanwhile.
    ///   - actionTypes: The action types the log may hold.
    ///   - reorderWindow: The most lines held back waiting for an earlier number; past it, the store
    ///     waiting longest is reported with a ``ActionLogError/Code/sequenceGap``.
    /// - Returns: What was replayed and every divergence found.
    /// - Throws: The errors of ``read(contentsOf:actionTypes:)``. The log is streamed, so the lines
    ///   before a malformed one have been replayed when it throws.
    /// - Note: Reducers that dispatch further actions will dispatch them again during a replay,
    ///   while the log holds them too; keep such side effects out of a dispatcher you replay into.
    @discardableResult
    public static func replay(
        contentsOf path: String,
        into dispatcher: Dispatcher,
        actionTypes: [any (ActionType & Decodable).Type],
        reorderWindow: Int = 10_000
    ) throws(ActionLogError) -> ReplayReport {
        let replayer = Replayer(dispatcher: dispatcher, path: path, window: reorderWindow)
        // Lines are read and decoded on another thread while this one dispatches.
        let stream = try PrefetchingRecordStream(path: path, actionTypes: actionTypes)
        defer { stream.close() }
        while let item = try stream.next() {
            switch item {
            case .entry(let entry): replayer.feed(entry)
            case .checkpoint(let line, let checks): replayer.feed(checks: checks, line: line)
            case .malformed(let error): throw error
            }
        }
        let outcome = replayer.finish()
        return ReplayReport(
            replayed: outcome.replayed,
            tornTail: stream.tornTail,
            mismatchedLines: outcome.mismatchedLines,
            divergences: outcome.divergences,
            checksumsVerified: outcome.checksumsVerified
        )
    }
}

extension ActionLog {
    /// ``replay(contentsOf:into:actionTypes:reorderWindow:)``, going on past lines it cannot read
    /// when `skippingMalformedLines` is `true`: each is told to the bound ``ReplayObserver`` and
    /// listed first in the report's divergences.
    ///
    /// - Throws: The errors of ``read(contentsOf:actionTypes:)`` about the file itself; about a line,
    ///   only when `skippingMalformedLines` is `false`.
    package static func replay(
        contentsOf path: String,
        into dispatcher: Dispatcher,
        actionTypes: [any (ActionType & Decodable).Type],
        reorderWindow: Int = 10_000,
        skippingMalformedLines: Bool
    ) throws(ActionLogError) -> ReplayReport {
        let observer = ReplayObservation.observer
        let replayer = Replayer(dispatcher: dispatcher, path: path, window: reorderWindow)
        let stream = try PrefetchingRecordStream(
            path: path,
            actionTypes: actionTypes,
            stopsAtMalformedLines: !skippingMalformedLines
        )
        defer { stream.close() }
        var skipped: [ActionLogError] = []
        while let item = try stream.next() {
            switch item {
            case .entry(let entry):
                replayer.feed(entry)
            case .checkpoint(let line, let checks):
                observer?.replayDidReadCheckpoint(
                    line: line,
                    path: path,
                    stores: checks.map { ($0.storeIdentifier, $0.sequenceNumber) }
                )
                replayer.feed(checks: checks, line: line)
            case .malformed(let error):
                guard skippingMalformedLines else { throw error }
                observer?.replayDidSkip(error)
                skipped.append(error)
            }
        }
        let outcome = replayer.finish()
        return ReplayReport(
            replayed: outcome.replayed,
            tornTail: stream.tornTail,
            mismatchedLines: outcome.mismatchedLines,
            divergences: skipped + outcome.divergences,
            checksumsVerified: outcome.checksumsVerified
        )
    }

    /// The digest that logs record for a state (see ``ActionLogMiddleware/Checksums``), or `nil`
    /// when it is not `Encodable` or fails to encode.
    package static func stateDigest(of state: any StateType) -> UInt64? {
        guard let encodable = state as? any Encodable else { return nil }
        return StateDigest.digest(of: encodable)
    }
}
