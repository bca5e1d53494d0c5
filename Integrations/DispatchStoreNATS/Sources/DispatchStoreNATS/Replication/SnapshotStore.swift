import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

/// Where a replication keeps its snapshots: a JetStream key-value bucket holding each snapshot's
/// bytes in chunks (`chunk.<sequence>.<index>`, each at most the server's `max_payload` less a
/// margin) and a manifest naming them under `latest`, the one before under `previous`.
///
/// ```json
/// {"format":"DispatchStoreNATS snapshot","version":1,"stream":"ORDERS","sequence":20000,"bytes":4812,"digest":"9f3a2b1c0d4e5f60","chunks":1,"writer":"r-5c1f","time":"2026-11-21T10:15:30.125Z"}
/// ```
///
/// The chunks are written first, then the manifest with a compare-and-set on `latest` (an older
/// snapshot never replaces a newer one), then chunks older than the previous snapshot are purged.
/// The bytes are the journal's snapshot format (`Journal.encodeSnapshot`), whose own header
/// carries its format version, the sequence and a digest of the states; the manifest adds the byte
/// count and a 64-bit FNV-1a digest of the whole, so that a chunk of another snapshot is noticed.
struct SnapshotStore: Sendable {
    static let formatName = "DispatchStoreNATS snapshot"
    static let formatVersion = 1

    /// What names a snapshot's chunks.
    struct Manifest: Codable, Equatable, Sendable {
        var format: String
        var version: Int
        var stream: String
        var sequence: UInt64
        var bytes: Int
        var digest: String
        var chunks: Int
        var writer: String
        var time: String
    }

    let bucket: KeyValueBucket
    let stream: String
    /// The largest chunk, in bytes.
    let chunkSize: Int

    /// What a snapshot is called in messages: `snapshot 2000 in bucket ORDERS-snapshots`.
    func name(_ sequence: UInt64) -> String {
        "snapshot \(sequence) in bucket \(bucket.name)"
    }

    /// Writes a snapshot of the stores after message `sequence`, unless a newer one is there.
    ///
    /// - Returns: Whether it became the latest snapshot.
    /// - Throws: ``NATSError`` when the bucket cannot be written.
    func write(_ data: Data, sequence: UInt64, writer: String) async throws(NATSError) -> Bool {
        let count = max(1, (data.count + chunkSize - 1) / chunkSize)
        for index in 0..<count {
            let start = index * chunkSize
            let chunk = data.subdata(in: start..<min(data.count, start + chunkSize))
            try await bucket.put(chunk, for: Self.chunkKey(sequence, index))
        }
        let manifest = Manifest(
            format: Self.formatName,
            version: Self.formatVersion,
            stream: stream,
            sequence: sequence,
            bytes: data.count,
            digest: Self.hex(Self.fnv(data)),
            chunks: count,
            writer: writer,
            time: Date().formatted(.iso8601)
        )
        let encoded = (try? JSONEncoder().encode(manifest)) ?? Data()
        var replaced: Manifest?
        while true {
            let current = try await bucket.entry(for: "latest")
            replaced = current.flatMap { try? JSONDecoder().decode(Manifest.self, from: $0.value) }
            if let replaced, replaced.sequence >= sequence {
                // A newer snapshot is there already: this one is not needed.
                for index in 0..<count {
                    try? await bucket.purge(Self.chunkKey(sequence, index))
                }
                return false
            }
            do {
                try await bucket.update(encoded, for: "latest", revision: current?.revision ?? 0)
                break
            } catch  where error.code == .wrongLastSequence {
                continue  // another writer came first: read again
            }
        }
        if let replaced, let data = try? JSONEncoder().encode(replaced) {
            try await bucket.put(data, for: "previous")
        }
        // Chunks older than the previous snapshot are no longer named by any manifest. Newer ones
        // may be another writer's, still being written.
        let oldest = replaced?.sequence ?? sequence
        for key in try await bucket.keys() {
            if let chunkSequence = Self.sequence(ofChunk: key), chunkSequence < oldest {
                try? await bucket.purge(key)
            }
        }
        return true
    }

    /// Why a snapshot was not read.
    enum ReadFailure: Error {
        /// It is damaged (a chunk missing, the digest wrong): an older one may do.
        case damaged(ReplicationError)
        /// It is of a newer format, or the bucket cannot be read: nothing older is better.
        case fatal(ReplicationError)
    }

    /// Reads the snapshot the manifest under `key` (`latest` or `previous`) names.
    ///
    /// - Returns: The manifest and the bytes, or `nil` when there is no manifest under `key`.
    /// - Throws: ``ReadFailure`` with a ``ReplicationError`` naming the snapshot: code
    ///   ``ReplicationError/Code/snapshot`` when it is damaged or of a newer format,
    ///   ``ReplicationError/Code/unavailable`` when the bucket cannot be read.
    func read(_ key: String) async throws(ReadFailure) -> (manifest: Manifest, data: Data)? {
        let entry: KeyValueBucket.Entry?
        do {
            entry = try await bucket.entry(for: key)
        } catch {
            throw unavailable("the snapshots of stream \(stream)", error)
        }
        guard let entry else { return nil }
        guard let manifest = try? JSONDecoder().decode(Manifest.self, from: entry.value),
            manifest.format == Self.formatName
        else {
            throw damaged("the manifest under key '\(key)' of bucket \(bucket.name) is not a snapshot manifest", nil)
        }
        guard manifest.version <= Self.formatVersion else {
            throw .fatal(
                ReplicationError(
                    .snapshot,
                    stream: stream,
                    sequence: manifest.sequence,
                    message: "\(name(manifest.sequence)) has format version \(manifest.version), newer than the "
                        + "version \(Self.formatVersion) this program reads; use a newer program"
                )
            )
        }
        guard manifest.stream == stream else {
            throw damaged("\(name(manifest.sequence)) belongs to stream \(manifest.stream), not \(stream)", manifest)
        }
        var data = Data()
        for index in 0..<manifest.chunks {
            let chunk: KeyValueBucket.Entry?
            do {
                chunk = try await bucket.entry(for: Self.chunkKey(manifest.sequence, index))
            } catch {
                throw unavailable(name(manifest.sequence), error)
            }
            guard let chunk else {
                throw damaged("\(name(manifest.sequence)) lacks its chunk \(index + 1) of \(manifest.chunks)", manifest)
            }
            data.append(chunk.value)
        }
        guard data.count == manifest.bytes, Self.hex(Self.fnv(data)) == manifest.digest else {
            throw damaged(
                "\(name(manifest.sequence)) holds \(data.count) bytes that do not match its manifest's count "
                    + "(\(manifest.bytes)) and digest",
                manifest
            )
        }
        return (manifest, data)
    }

    private func unavailable(_ what: String, _ error: NATSError) -> ReadFailure {
        .fatal(
            ReplicationError(
                .unavailable,
                stream: stream,
                natsError: error,
                message: "cannot read \(what): \(clause(of: error))"
            )
        )
    }

    private func damaged(_ reason: String, _ manifest: Manifest?) -> ReadFailure {
        .damaged(ReplicationError(.snapshot, stream: stream, sequence: manifest?.sequence, message: reason))
    }

    static func chunkKey(_ sequence: UInt64, _ index: Int) -> String {
        "chunk.\(sequence).\(index)"
    }

    static func sequence(ofChunk key: String) -> UInt64? {
        let parts = key.split(separator: ".")
        guard parts.count == 3, parts[0] == "chunk" else { return nil }
        return UInt64(parts[1])
    }

    /// FNV-1a, 64 bits: the digest the journal's snapshots use.
    static func fnv(_ data: Data) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
