import Foundation

extension Replication {
    /// How far a replica is behind its stream: the stream's last message as this replica knows
    /// it, the last one it applied, and how long ago it applied one.
    ///
    /// The stream's last message is what the replica heard last: from the messages delivered to it
    /// (each says how many come after it), from the acknowledgements of its appends, and from the
    /// stream's state when it asked. A replica cut off from the servers hears nothing: its lag then
    /// shows in ``sinceLastApplied``, which grows, not in ``behind``.
    public struct Lag: Sendable, Hashable, CustomStringConvertible {
        /// The sequence number of the stream's last message, as far as this replica knows.
        public let streamLastSequence: UInt64
        /// The sequence number of the last message this replica applied.
        public let appliedSequence: UInt64
        /// How long ago this replica applied its last message (or started, before the first).
        public let sinceLastApplied: Duration

        /// How many messages of the stream this replica has not applied yet.
        public var behind: UInt64 {
            streamLastSequence - min(appliedSequence, streamLastSequence)
        }

        /// A line such as `2 messages behind (applied 1998 of 2000; the last 0.004 s ago)`.
        public var description: String {
            let seconds =
                Double(sinceLastApplied.components.seconds) + Double(sinceLastApplied.components.attoseconds) / 1e18
            return "\(behind) message\(behind == 1 ? "" : "s") behind (applied \(appliedSequence) of "
                + "\(streamLastSequence); the last \(String(format: "%.3f", seconds)) s ago)"
        }
    }
}
