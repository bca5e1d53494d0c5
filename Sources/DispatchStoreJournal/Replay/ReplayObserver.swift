import DispatchStore

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
