/// What a wait on a replica's applier ends with: a perform's attempt, or a wait for a sequence
/// number.
///
/// Indirect, so that it is one pointer wide: every async frame that holds one (a perform's attempt
/// and the task machinery around it) stays small enough for the task's allocator to keep it in the
/// slab it has, rather than asking `malloc` for a large block per perform.
indirect enum ApplierWaitResult: Sendable {
    /// The perform's message was applied here, with this outcome.
    case applied(Replication.AppliedMessage)
    /// The stream did not take the perform's append: the perform may try again.
    case appendFailed(NATSError)
    /// The wait failed: a deadline, a cancellation, the replica's failure or close.
    case failed(ReplicationError)
    /// The replica applied up to this sequence number, at least the one waited for.
    case reached(UInt64)
}
