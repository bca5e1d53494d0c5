import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

extension Replication {
    /// Creates the stream and the snapshots' bucket, or opens them, with at least the replicas
    /// asked for (raising those of an existing one).
    ///
    /// - Returns: The stream's state and the bucket.
    /// - Throws: ``ReplicationError/Code/unavailable`` when the servers cannot be used,
    ///   ``ReplicationError/Code/invalidSetup`` naming both numbers when the stream or the bucket
    ///   has fewer replicas than asked and the servers refuse to raise them.
    static func openStream(
        _ configuration: Configuration,
        on connection: NATSConnection,
        until deadline: ContinuousClock.Instant
    ) async throws(ReplicationError) -> (StreamInfo, KeyValueBucket) {
        let stream = configuration.stream
        let clusterSize = Set(connection.knownServers).count
        var replicas = configuration.replicas ?? min(3, max(1, clusterSize))
        var streamConfiguration = StreamConfiguration(
            name: stream,
            subjects: [configuration.subject],
            replicas: replicas
        )
        streamConfiguration.maximumMessages = configuration.maximumMessages
        var info: StreamInfo
        do {
            do {
                info = try await retryingTransient(until: deadline) { () async throws(NATSError) in
                    try await connection.createStream(streamConfiguration)
                }
            } catch  where configuration.replicas == nil && replicas > 1 && error.jetStreamCode == 10074 {
                // The servers the client knows of are not one cluster (several names for one server):
                // the default is what the server takes.
                replicas = 1
                streamConfiguration.replicas = 1
                info = try await retryingTransient(until: deadline) { () async throws(NATSError) in
                    try await connection.createStream(streamConfiguration)
                }
            }
        } catch {
            throw cannotStart(stream, error)
        }
        let bucketName = configuration.snapshotBucket
        let bucket: KeyValueBucket
        do {
            bucket = try await retryingTransient(until: deadline) { () async throws(NATSError) in
                try await connection.keyValueBucket(bucketName, replicas: replicas)
            }
        } catch {
            throw cannotStart(stream, error)
        }
        // "No suitable peers" passes when a server is starting, not when the cluster is too small: a
        // few seconds for it. A timeout (an election under way) is tried again until the deadline.
        let noPeersDeadline = min(deadline, ContinuousClock.now + .seconds(5))
        for (name, what) in [(stream, "stream \(stream)"), ("KV_\(bucketName)", "the snapshots' bucket \(bucketName)")]
        {
            let current: StreamInfo
            do {
                let deadlineOf = { (error: NATSError) in
                    error.jetStreamCode == NATSError.noSuitablePeers ? noPeersDeadline : deadline
                }
                current = try await retryingTransient(until: deadlineOf) { () async throws(NATSError) in
                    try await connection.raiseReplicas(ofStream: name, to: replicas)
                }
            } catch {
                throw ReplicationError(
                    .invalidSetup,
                    stream: stream,
                    natsError: error,
                    message: "\(what) is kept by fewer servers than the \(replicas) asked for, and the servers did not "
                        + "raise it: \(clause(of: error)); set Replication.Configuration.replicas to the number it has, "
                        + "or give the cluster more servers"
                )
            }
            if name == stream { info = current }
        }
        return (info, bucket)
    }

    /// The error of a start that `error` stopped.
    static func cannotStart(_ stream: String, _ error: NATSError) -> ReplicationError {
        ReplicationError(
            error.code == .notPermitted ? .notPermitted : .unavailable,
            stream: stream,
            natsError: error,
            message: "cannot start the replica of stream \(stream): \(clause(of: error))"
        )
    }
}

/// Runs `body` again, a little later, while it fails with a transient error and `deadline` has not
/// passed.
func retryingTransient<Result>(
    until deadline: ContinuousClock.Instant,
    _ body: () async throws(NATSError) -> Result
) async throws(NATSError) -> Result {
    try await retryingTransient(until: { _ in deadline }, body)
}

/// Runs `body` again, a little later, while it fails with a transient error and the deadline
/// `deadline` gives for that error has not passed.
func retryingTransient<Result>(
    until deadline: (NATSError) -> ContinuousClock.Instant,
    _ body: () async throws(NATSError) -> Result
) async throws(NATSError) -> Result {
    while true {
        do {
            return try await body()
        } catch {
            guard error.isTransient, ContinuousClock.now < deadline(error) else { throw error }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
