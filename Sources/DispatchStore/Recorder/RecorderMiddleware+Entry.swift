public import Foundation

extension RecorderMiddleware {
    /// One recorded instant.
    public struct Entry: Sendable, Identifiable {
        /// A number unique in this recorder, 0 for the first entry and higher for each entry after it.
        ///
        /// It does not change when older entries are dropped, nor when a later transaction of the
        /// same step (same key, or same ``Group``) replaces the newest entry's states. It changes
        /// only when a group's step moves past entries recorded in between: the step then becomes a
        /// new, newest entry.
        public let id: Int
        /// The transaction whose end was recorded (for a grouped entry, the latest one); `nil` for the
        /// first entry.
        public let transaction: Transaction?
        /// When the entry was taken (for a grouped entry, when its latest transaction was recorded).
        public let date: Date
        /// The states of the stores, in registration order.
        public internal(set) var snapshots: [StoreSnapshot]
        /// The key that `groupingBy:` gave the entry's transactions; `nil` when it gave none, and for
        /// the entries of a ``Group``.
        public let groupKey: (any Hashable & Sendable)?
        /// How many recorded transactions the entry stands for: 0 for the first entry, 1 for an
        /// ordinary entry, more for a grouped one.
        public let transactionCount: Int
        /// The number of moves made before the entry was taken: entries of an earlier epoch are
        /// never merged into.
        let epoch: Int
        /// The number of the ``Group`` whose step the entry is, if any.
        let group: Int?

        /// The action of the recorded transaction (for a grouped entry, of the latest one); `nil`
        /// for the first entry.
        public var action: (any ActionType)? {
            transaction?.action
        }

        /// The recorded state of the store registered under `identifier`, if the entry has it.
        ///
        /// - Parameter identifier: The store's identifier.
        /// - Returns: Its state at the time of the entry.
        public func state(of identifier: String) -> (any StateType)? {
            snapshots.first { $0.storeIdentifier == identifier }?.state
        }
    }
}
