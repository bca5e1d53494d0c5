public import DispatchStore

extension Replication {
    /// What ``perform(_:timeout:)`` returns: the result of applying the action here, and its place in
    /// the stream.
    public struct Outcome: Sendable {
        /// The result of the `.sync` dispatch that applied the action on this replica.
        public let result: DispatchResult
        /// The action's sequence number in the stream.
        public let sequence: UInt64
    }
}
