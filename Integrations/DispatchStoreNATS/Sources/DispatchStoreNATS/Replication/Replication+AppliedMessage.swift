public import DispatchStore
public import Foundation

extension Replication {
    /// One message a replica applied, as `onApply` hears of it.
    public struct AppliedMessage: Sendable {
        /// Its sequence number in the stream.
        public let sequence: UInt64
        /// The result of applying it here.
        public let result: DispatchResult
        /// Its message id.
        public let messageID: String?
        /// Whether this replica appended it.
        public let isOwn: Bool
        /// When the stream stored it.
        public let storedAt: Date
    }
}
