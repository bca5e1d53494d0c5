import Foundation

extension Replication {
    /// What a replica did when it started: the snapshot it loaded and the messages it applied after
    /// it, up to the stream's end.
    public struct CatchUp: Sendable, CustomStringConvertible {
        /// The sequence number the loaded snapshot covers, or `nil` when the replica started from
        /// the stores' initial states.
        public let snapshotSequence: UInt64?
        /// How many messages it applied after the snapshot.
        public let caughtUp: Int
        /// The sequence number of the last message applied: the stream's end when it started.
        public let lastSequence: UInt64
        /// How long loading and catching up took.
        public let duration: Duration
        /// Snapshots passed over because they were damaged.
        public let problems: [ReplicationError]
        /// How many servers keep the stream (at least the configuration's ``Configuration/replicas``,
        /// whose default is three on a cluster).
        public let streamReplicas: Int

        /// A line such as `caught up 200 messages after snapshot 2000 in 0.041 s (stream at 2200)`.
        public var description: String {
            let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            var text = "caught up \(caughtUp) message\(caughtUp == 1 ? "" : "s")"
            text += snapshotSequence.map { " after snapshot \($0)" } ?? " from the start"
            text += " in \(String(format: "%.3f", seconds)) s (stream at \(lastSequence))"
            if !problems.isEmpty {
                text += "; passed over: " + problems.map(\.message).joined(separator: "; ")
            }
            return text
        }
    }
}
