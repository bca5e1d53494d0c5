public import DispatchStore
public import Foundation

extension Replication {
    /// One message a replica applied: what ``Replication/perform(_:timeout:)`` returns for its
    /// action (read-your-writes), and what `onApply` hears of for every message.
    public struct AppliedMessage: Sendable {
        /// Its sequence number in the stream.
        public let sequence: UInt64
        /// The result of applying it here.
        public let result: DispatchResult
        /// Its message id: `<replica name>.<random>.<number>` for a replica's append.
        public let messageID: String?
        /// Whether this replica appended it.
        public let isOwn: Bool
        /// When the stream stored it.
        public let storedAt: Date
    }
}
