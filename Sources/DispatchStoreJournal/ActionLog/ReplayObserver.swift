package import DispatchStore

/// Follows a replay or a journal's recovery line by line: the hook the inspector
/// (`DispatchStoreInspector`) uses to tell which line each replayed transaction comes from.
///
/// Bind one with ``ReplayObservation/observer`` around ``ActionLog/replay(contentsOf:into:actionTypes:reorderWindow:)``,
/// ``ActionLog/replay(contentsOf:into:actionTypes:reorderWindow:skippingMalformedLines:)`` or
/// `Journal(directory:dispatcher:...)`: the replay calls it on the replaying thread, right before
/// each dispatch, so that middleware called by that dispatch know the line.
package protocol ReplayObserver: AnyObject, Sendable {
    /// The replay is about to dispatch `entry`'s action (to all its stores at once, or to one of
    /// them; a held-back entry may come again for another store).
    func replayWillApply(_ entry: ActionLog.Entry, from path: String)
    /// A checkpoint line with the digests of `stores` (identifier and sequence number) was read.
    func replayDidReadCheckpoint(line: Int, path: String, stores: [(identifier: String, sequenceNumber: UInt64)])
    /// A digest recorded at `line` was compared with the state of `storeIdentifier` once it reached
    /// `sequenceNumber`.
    func replayDidVerify(storeIdentifier: String, sequenceNumber: UInt64, line: Int, path: String, matches: Bool)
    /// A line was skipped: not a record, or an action of a type not given to the replay.
    func replayDidSkip(_ error: ActionLogError)
    /// Recovery set the stores to the states of a snapshot before replaying the records after it.
    func recoveryDidRestore(snapshot path: String, generation: Int, recordCount: Int)
}

/// Where a replay finds its ``ReplayObserver``.
package enum ReplayObservation {
    /// The observer of the replays and recoveries started while it is bound (on this thread or task).
    @TaskLocal package static var observer: (any ReplayObserver)?
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
