import DispatchStore
import DispatchStoreJournal
public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension Inspector {
    /// What ``writePage(to:)`` wrote.
    public struct WrittenPage: Sendable, Hashable, CustomStringConvertible {
        /// The page's path.
        public let path: String
        /// Its size in bytes.
        public let byteCount: Int
        /// How many transactions it shows.
        public let transactionCount: Int
        /// How many older transactions were dropped before it was written.
        public let droppedTransactionCount: Int
        /// How many problems it lists.
        public let problemCount: Int

        /// A sentence such as `the page run.html shows 1200 transactions (312 KB)`.
        public var description: String {
            let size =
                byteCount < 1 << 20
                ? "\((byteCount + 1_023) / 1_024) KB"
                : String(
                    format: "%.1f MB",
                    Double(byteCount) / 1_048_576
                )
            var text =
                "the page \(path) shows \(transactionCount) transaction\(transactionCount == 1 ? "" : "s") (\(size))"
            if droppedTransactionCount > 0 { text += "; \(droppedTransactionCount) older ones were dropped" }
            if problemCount > 0 { text += "; it lists \(problemCount) problem\(problemCount == 1 ? "" : "s")" }
            return text
        }
    }

    /// The page of what the inspector recorded so far: one self-contained HTML file.
    ///
    /// The page holds its own style sheet, script and data, requests nothing (its
    /// Content-Security-Policy forbids it) and inserts every identifier, type name and payload
    /// string as text, so that data from the run can neither end the embedded data nor run. States
    /// are encoded now: a page costs about what the recorded changes take.
    ///
    /// - Returns: The page's bytes (UTF-8 HTML).
    /// - Note: Thread-safe; transactions that end meanwhile are in the next page.
    public func makePage() -> Data {
        let (page, _) = makePageAndCounts()
        return Data(page)
    }

    /// Writes the page of what the inspector recorded so far to `path`, replacing the file.
    ///
    /// The page is written to a temporary file beside `path`, then renamed over it, so that a reader
    /// sees the old page or the new one, never half of one. A path that is not a regular file (a
    /// character device such as `/dev/stdout`) is written to directly.
    ///
    /// - Parameter path: Where to write the page.
    /// - Returns: What was written.
    /// - Throws: ``InspectorError`` naming the path and the system's reason: a missing directory, a
    ///   directory, a symbolic link loop, no permission, a full disk.
    /// - Note: Thread-safe; may be called while transactions run (for example on a signal).
    @discardableResult
    public func writePage(to path: String) throws(InspectorError) -> WrittenPage {
        let (page, counts) = makePageAndCounts()
        try Self.write(page, to: path)
        return WrittenPage(
            path: path,
            byteCount: page.count,
            transactionCount: counts.kept,
            droppedTransactionCount: counts.dropped,
            problemCount: counts.problems
        )
    }

    /// Checks that a page can be written to `path`, without writing one: for a program that takes
    /// the path on its command line and should refuse a bad one before it starts.
    ///
    /// - Parameter path: Where the page will be written.
    /// - Throws: ``InspectorError`` naming the path and the reason, as ``writePage(to:)`` would.
    public static func checkPagePath(_ path: String) throws(InspectorError) {
        guard !path.isEmpty else { throw .unwritable(path, reason: "the path is empty") }
        var status = stat()
        if stat(path, &status) == 0 {
            if (status.st_mode & S_IFMT) == S_IFDIR { throw .unwritable(path, reason: "it is a directory") }
            if (status.st_mode & S_IFMT) != S_IFREG {
                guard access(path, W_OK) == 0 else { throw .unwritable(path, reason: SystemReason.current(path: path)) }
                return
            }
        } else if errno != ENOENT {
            throw .unwritable(path, reason: SystemReason.current(path: path))
        }
        // A file created and removed beside it: the directory exists and takes new files.
        let probe = temporaryPath(for: path)
        let descriptor = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .unwritable(path, reason: SystemReason.current(path: path)) }
        close(descriptor)
        unlink(probe)
    }

    // MARK: Internals

    func makePageAndCounts() -> (page: [UInt8], counts: (kept: Int, dropped: Int, problems: Int)) {
        // The states read and not encoded yet are encoded now, under the lock: a page waits for it.
        let snapshot = withSettledState { state in
            state.encodeAll()
            return state
        }
        let recorder = recorderSummary()
        var data = PageData(state: snapshot, recorder: recorder, generated: Date())
        let page = PageDocument.html(data: data.json())
        return (page, (snapshot.keptTransactions, snapshot.droppedTransactions, snapshot.problemCount))
    }

    private static func temporaryPath(for path: String) -> String {
        "\(path).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    private static func write(_ bytes: [UInt8], to path: String) throws(InspectorError) {
        var status = stat()
        let exists = stat(path, &status) == 0
        if !exists && errno != ENOENT { throw .unwritable(path, reason: SystemReason.current(path: path)) }
        if exists, (status.st_mode & S_IFMT) == S_IFDIR { throw .unwritable(path, reason: "it is a directory") }
        if exists, (status.st_mode & S_IFMT) != S_IFREG {
            let descriptor = open(path, O_WRONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .unwritable(path, reason: SystemReason.current(path: path)) }
            defer { close(descriptor) }
            if let reason = writeAll(bytes, to: descriptor) { throw .unwritable(path, reason: reason) }
            return
        }
        let temporary = temporaryPath(for: path)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw .unwritable(path, reason: SystemReason.current(path: path)) }
        let failure = writeAll(bytes, to: descriptor)
        close(descriptor)
        if let failure {
            unlink(temporary)
            throw .unwritable(path, reason: failure)
        }
        guard rename(temporary, path) == 0 else {
            let reason = SystemReason.current(path: path)
            unlink(temporary)
            throw .unwritable(path, reason: reason)
        }
    }

    /// Writes all of `bytes`; `nil`, or the reason it failed.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> String? {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += written
            }
            return nil
        }
    }
}
