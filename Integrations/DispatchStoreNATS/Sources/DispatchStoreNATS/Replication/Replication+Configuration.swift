import DispatchStore
public import DispatchStoreJournal
import Foundation

extension Replication {
    /// Where the stream is and how a replica uses it.
    public struct Configuration: Sendable {
        /// The NATS servers' URLs.
        public var servers: [String]
        /// The stream's name (letters, digits, `-` and `_`); created when it does not exist.
        public var stream: String
        /// The subject the stream stores and replicas append to: `dispatchstore.<stream>` by default.
        package var subject: String
        /// How many servers keep the stream and the snapshots, or `nil` (the default) for three on
        /// a cluster of three servers or more, as many as the cluster has when fewer, and one on a
        /// single server.
        ///
        /// With three, the stream and the snapshots survive the loss of any one server: its
        /// replicas elect a new leader within seconds and appends go on. With one, they live on
        /// one server: while it is down, every append fails and no replica can start.
        ///
        /// The cluster's size is what the servers tell the client (the servers it was given and
        /// those it discovered), not the number of URLs given. A stream or bucket that exists with
        /// fewer replicas is raised to this number when the replica starts (JetStream copies the
        /// messages to the new servers while the stream stays in use); one with more is left as it
        /// is. When the servers refuse to raise it, the replica does not start: the error names both
        /// numbers.
        public var replicas: Int?
        /// How many messages between two snapshots, or `nil` for none.
        public var snapshotEvery: Int? = 1_000
        /// Whether a starting replica loads the latest snapshot (`true`), or applies the whole stream
        /// from its first message (`false`: for a complete action log of it; it fails with
        /// ``ReplicationError/Code/gap`` when the stream's limits discarded messages).
        public var startsFromSnapshot = true
        /// The key-value bucket of the snapshots: `<stream>-snapshots` by default.
        package var snapshotBucket: String
        /// How long ``Replication/perform(_:timeout:)`` waits, by default, for its action to be
        /// stored and applied here.
        public var timeout: Duration = .seconds(30)
        /// The most messages the stream keeps when it is created, or `nil` for no limit.
        ///
        /// Older messages are discarded. With a limit, keep `snapshotEvery` well below it, so that
        /// a replica that falls behind finds a snapshot covering what was discarded.
        public var maximumMessages: Int64?
        /// A name for this replica in message ids and in the servers' view of its connection.
        ///
        /// A random one by default; letters, digits, `-` and `_`, unique among the replicas running
        /// at once.
        public var replicaName: String
        /// How to connect to the servers.
        package var connection = NATSConnection.Options()
        /// How to upgrade states in snapshots written with an older ``VersionedState/stateVersion``.
        public var migrations: [StateMigration] = []
        /// Who the replica is to the servers, when their `authorization` asks; `nil` for nobody.
        public var credentials: Credentials?
        /// How the replica talks TLS to the servers; `nil` for no TLS unless a URL starts with
        /// `tls://`.
        public var tls: TLS?

        /// A configuration for `stream` on `servers`, with the defaults: the stream kept by three
        /// servers (as many as the cluster has, when fewer), a snapshot every 1,000 messages, 30
        /// seconds for a perform, no limit on the stream.
        ///
        /// - Parameters:
        ///   - servers: The NATS servers' URLs.
        ///   - stream: The stream's name.
        public init(servers: [String], stream: String) {
            self.servers = servers
            self.stream = stream
            subject = "dispatchstore.\(stream)"
            snapshotBucket = "\(stream)-snapshots"
            replicaName = "r-" + UUID().uuidString.prefix(8).lowercased()
        }
    }
}
