import CNATS
package import Foundation

/// A JetStream key-value bucket: the latest value of each key, with a revision that makes
/// compare-and-set updates possible.
///
/// ```swift
/// let bucket = try await connection.keyValueBucket("settings")
/// let revision = try await bucket.put(Data("on".utf8), for: "feature.x")
/// _ = try await bucket.update(Data("off".utf8), for: "feature.x", revision: revision)
/// ```
///
/// - Note: Thread-safe; every call is `async` and runs its nats.c call on a thread of its own.
package final class KeyValueBucket: Sendable {
    /// One key's latest value.
    package struct Entry: Sendable, Hashable {
        /// The key.
        package let key: String
        /// The value.
        package let value: Data
        /// The revision: the sequence number of the value in the bucket's stream, for ``update(_:for:revision:)``.
        package let revision: UInt64
    }

    /// The bucket's name.
    package let name: String
    private let connection: NATSConnection
    private let store: CPointer

    init(name: String, connection: NATSConnection, store: CPointer) {
        self.name = name
        self.connection = connection
        self.store = store
    }

    /// The latest value of `key`.
    ///
    /// - Parameter key: The key (letters, digits, `-`, `_`, `=`, `.` and `/`).
    /// - Returns: The entry, or `nil` when the key has no value (never put, deleted or purged).
    /// - Throws: ``NATSError`` naming the bucket.
    package func entry(for key: String) async throws(NATSError) -> Entry? {
        try await call("reading key \(key)") { store, failure throws(NATSError) -> Entry? in
            var entry: OpaquePointer?
            let status = kvStore_Get(&entry, store, key)
            if status == NATS_NOT_FOUND { return nil }
            guard status == NATS_OK, let entry else { throw failure(status) }
            defer { kvEntry_Destroy(entry) }
            let count = Int(kvEntry_ValueLen(entry))
            let value = count > 0 ? Data(bytes: kvEntry_Value(entry), count: count) : Data()
            return Entry(key: key, value: value, revision: kvEntry_Revision(entry))
        }
    }

    /// Sets the value of `key`, whatever it was.
    ///
    /// - Parameters:
    ///   - value: The value; at most the server's `max_payload`.
    ///   - key: The key.
    /// - Returns: The new revision.
    /// - Throws: ``NATSError`` naming the bucket.
    @discardableResult
    package func put(_ value: Data, for key: String) async throws(NATSError) -> UInt64 {
        try await call("writing key \(key)") { store, failure throws(NATSError) in
            var revision: UInt64 = 0
            let status = value.withUnsafeBytes { bytes in
                kvStore_Put(&revision, store, key, bytes.baseAddress, Int32(bytes.count))
            }
            guard status == NATS_OK else { throw failure(status) }
            return revision
        }
    }

    /// Sets the value of `key` only when its latest revision is `revision` (0: when it has no
    /// value).
    ///
    /// - Parameters:
    ///   - value: The value.
    ///   - key: The key.
    ///   - revision: The revision the caller read, or 0 for a key without a value.
    /// - Returns: The new revision.
    /// - Throws: ``NATSError`` with ``NATSError/Code/wrongLastSequence`` when another value came
    ///   first, naming the bucket.
    @discardableResult
    package func update(_ value: Data, for key: String, revision: UInt64) async throws(NATSError) -> UInt64 {
        try await call("updating key \(key)") { store, failure throws(NATSError) in
            var newRevision: UInt64 = 0
            let status = value.withUnsafeBytes { bytes in
                revision == 0
                    ? kvStore_Create(&newRevision, store, key, bytes.baseAddress, Int32(bytes.count))
                    : kvStore_Update(&newRevision, store, key, bytes.baseAddress, Int32(bytes.count), revision)
            }
            guard status == NATS_OK else { throw failure(status) }
            return newRevision
        }
    }

    /// Removes `key` and every value it had.
    ///
    /// - Parameter key: The key.
    /// - Throws: ``NATSError`` naming the bucket.
    package func purge(_ key: String) async throws(NATSError) {
        try await call("purging key \(key)") { store, failure throws(NATSError) in
            let status = kvStore_Purge(store, key, nil)
            guard status == NATS_OK else { throw failure(status) }
        }
    }

    /// The keys that have a value.
    ///
    /// - Returns: The keys, in no particular order.
    /// - Throws: ``NATSError`` naming the bucket.
    package func keys() async throws(NATSError) -> [String] {
        try await call("listing the keys") { store, failure throws(NATSError) -> [String] in
            var list = kvKeysList()
            let status = kvStore_Keys(&list, store, nil)
            if status == NATS_NOT_FOUND { return [] }
            guard status == NATS_OK else { throw failure(status) }
            defer { kvKeysList_Destroy(&list) }
            return (0..<Int(list.Count)).compactMap { list.Keys[$0].map { String(cString: $0) } }
        }
    }

    /// Runs `body` with the bucket's store on a thread of its own, and with what turns a failed
    /// status into a ``NATSError`` naming the bucket and `what`.
    private func call<Result: Sendable>(
        _ what: String,
        _ body: @escaping @Sendable (OpaquePointer, (natsStatus) -> NATSError) throws(NATSError) -> Result
    ) async throws(NATSError) -> Result {
        let name = name
        return try await connection.call(stream: name) { [store, handle = connection.handle] _, _ throws(NATSError) in
            try body(store.pointer) { status in handle.error(status, "\(what) of bucket \(name)", stream: name) }
        }
    }
}

extension NATSConnection {
    /// Opens the key-value bucket named `name`, creating it when it does not exist.
    ///
    /// - Parameters:
    ///   - name: The bucket's name (letters, digits, `-` and `_`).
    ///   - replicas: How many servers keep a copy, when the bucket is created.
    /// - Returns: The bucket.
    /// - Throws: ``NATSError`` naming the bucket.
    package func keyValueBucket(_ name: String, replicas: Int = 1) async throws(NATSError) -> KeyValueBucket {
        let store = try await call(stream: name) { [handle] _, jetStream throws(NATSError) in
            var store: OpaquePointer?
            var status = js_KeyValue(&store, jetStream, name)
            if status == NATS_NOT_FOUND {
                var settings = kvConfig()
                kvConfig_Init(&settings)
                status = name.withCString { cName in
                    settings.Bucket = cName
                    settings.History = 1
                    settings.Replicas = Int32(replicas)
                    settings.StorageType = js_FileStorage
                    return js_CreateKeyValue(&store, jetStream, &settings)
                }
            }
            guard status == NATS_OK, let store else {
                throw handle.error(status, "opening key-value bucket \(name)", stream: name)
            }
            handle.own(store) { kvStore_Destroy($0) }
            return CPointer(store)
        }
        return KeyValueBucket(name: name, connection: self, store: store)
    }
}

/// A nats.c object that is thread-safe, passed between threads.
struct CPointer: @unchecked Sendable {
    // @unchecked: only pointers to thread-safe nats.c objects are wrapped, and their lifetime is the
    // connection's (NATSHandle destroys them when it closes, once no call uses them).
    let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }
}
