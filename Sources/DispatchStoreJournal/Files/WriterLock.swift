import DispatchStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An advisory lock (`flock(2)`) on a lock file, held while a writer has an action log or a journal
/// directory open: one writer at a time, in any process.
///
/// The holder writes its process id and name into the file, so that a writer it refuses can say who
/// holds it. The kernel drops the lock when the holder closes it or dies, `kill -9` included, so a
/// crash never leaves a stale lock; the file stays, and the next holder writes over it. Two opens in
/// one process exclude each other too (a lock belongs to an open file, not to a process).
///
/// A child process started while a lock is held shares it until the child `exec`s (the descriptor
/// is close-on-exec): for that moment the lock stays taken after its holder released it. A writer
/// of this process that finds the lock taken with this process's id in it, and no writer of this
/// process holding it, waits for that moment to pass (at most ``childWait``).
///
/// Not thread-safe: its owner calls it under its own lock.
final class WriterLock {
    /// Why the lock was not taken.
    struct Refusal: Error {
        /// Whether another writer holds it (rather than the lock file failing to open).
        let isHeld: Bool
        /// Who holds it (`process 4242 (inventory)`, `this process (4242, inventory), through another
        /// ActionLogMiddleware or Journal`), or the system's reason.
        let reason: String
    }

    /// The lock file.
    let path: String
    private var descriptor: Int32
    /// The lock file's identity, in ``held``.
    private let key: FileKey

    /// A file, by device and inode.
    private struct FileKey: Hashable, Sendable {
        let device: UInt64
        let inode: UInt64
    }

    /// The lock files a writer of this process holds.
    private static let held = LockedBox(Set<FileKey>())

    /// How long a writer waits for a lock that this process released and a child it started still
    /// shares, in milliseconds.
    static let childWait = 2_000

    /// Takes the lock in `path`, creating the file if needed, without waiting.
    ///
    /// - Throws: ``Refusal`` naming the holder when another writer holds it, or the system's reason
    ///   when the lock file cannot be opened.
    init(acquiring path: String) throws(Refusal) {
        let held = Self.held
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Refusal(isHeld: false, reason: SystemReason.current(path: path)) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = SystemReason.current(path: path)
            close(descriptor)
            throw Refusal(isHeld: false, reason: reason)
        }
        let key = FileKey(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
        var waited = 0
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            guard errno == EWOULDBLOCK else {
                let reason = SystemReason.current(path: path)
                close(descriptor)
                throw Refusal(isHeld: false, reason: reason)
            }
            let (pid, name) = Self.holder(descriptor)
            let ours = pid == getpid()
            let heldHere = held.withLockedValue { $0.contains(key) }
            // Released by this process, and shared for a moment by a child it is starting.
            if ours && !heldHere && waited < Self.childWait {
                usleep(1_000)
                waited += 1
                continue
            }
            close(descriptor)
            throw Refusal(isHeld: true, reason: Self.describe(pid: pid, name: name, heldHere: heldHere))
        }
        held.withLockedValue { _ = $0.insert(key) }
        // Who holds it, for the writers it refuses; a failure here only makes their message vaguer.
        let name = ProcessInfo.processInfo.processName
        _ = ftruncate(descriptor, 0)
        _ = AppendFile.writeAll(Data("\(getpid()) \(name)\n".utf8), to: descriptor)
        (self.path, self.descriptor, self.key) = (path, descriptor, key)
    }

    deinit {
        release()
    }

    /// Releases the lock; calling it again does nothing.
    func release() {
        guard descriptor >= 0 else { return }
        WriterLock.held.withLockedValue { _ = $0.remove(key) }
        close(descriptor)
        descriptor = -1
    }

    /// The process id and name the holder wrote into the file, if it wrote them yet.
    private static func holder(_ descriptor: Int32) -> (pid: Int32?, name: String?) {
        var bytes = [UInt8](repeating: 0, count: 256)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress!, $0.count, 0) }
        let text = String(decoding: bytes.prefix(max(count, 0)), as: UTF8.self)
        let fields = text.split(separator: "\n").first?.split(separator: " ", maxSplits: 1) ?? []
        return (fields.first.flatMap { Int32($0) }, fields.count > 1 ? String(fields[1]) : nil)
    }

    /// The holder in words.
    private static func describe(pid: Int32?, name: String?, heldHere: Bool) -> String {
        guard let pid else { return "another writer (it has not written its process id yet)" }
        guard pid == getpid() else { return "process \(pid)\(name.map { " (\($0))" } ?? "")" }
        let named = name.map { ", \($0)" } ?? ""
        return heldHere
            ? "this process (\(pid)\(named)), through another ActionLogMiddleware or Journal"
            : "this process (\(pid)\(named)), through a child process it started, which shares the lock"
    }
}
