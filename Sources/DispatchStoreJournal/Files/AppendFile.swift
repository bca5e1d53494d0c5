import DispatchStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A file of lines opened for appending: one `write(2)` per line, nothing buffered in the process,
/// and a torn tail cut away when it is opened.
///
/// A regular file, or a character device (`/dev/null`, `/dev/full`, a terminal), which is written
/// to as it is: nothing is read, repaired or locked there. Anything else is refused.
///
/// Not thread-safe: its owner calls it under its own lock.
final class AppendFile {
    /// Why the file could not be opened or written: the system's reason.
    struct Failure: Error {
        let reason: String
        /// Whether the file holds more damage than a crash leaves (not only its last line).
        var isDamaged = false
        /// The refusal, when another writer holds the file's lock.
        var lockRefusal: WriterLock.Refusal?
    }

    let path: String
    private(set) var descriptor: Int32
    /// The file's length, where the next line goes.
    private(set) var size: Int
    /// The lock held while the file is open, if one was asked for.
    private var lock: WriterLock?

    /// Opens (or creates) `path`.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - truncating: Empty the file first (once the lock is held).
    ///   - lockPath: A lock file to hold while the file is open (``WriterLock``), taken before
    ///     anything in the file changes; `nil` for none. Not taken for a character device.
    ///   - savePath: Where to save the bytes of a torn tail before cutting it away, given
    ///     its offset; `nil` cuts without saving.
    /// - Returns: The file, and the torn tail it cut away, if any.
    /// - Throws: ``Failure`` with the system's reason; when more than the last line is damaged, or
    ///   the tail after the last newline is longer than a line may be (the file is then not a log,
    ///   and is left as it was); or when another writer holds the lock.
    static func open(
        path: String,
        truncating: Bool = false,
        lockedBy lockPath: String? = nil,
        savingTornTailTo savePath: ((Int) -> String)? = nil
    ) throws(Failure) -> (AppendFile, ActionLog.TornTail?) {
        // Never O_TRUNC here: the file may be another writer's until the lock says otherwise.
        let descriptor = openFile(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Failure(reason: SystemReason.current(path: path)) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = SystemReason.current(path: path)
            _ = closeFile(descriptor)
            throw Failure(reason: reason)
        }
        let file = AppendFile(path: path, descriptor: descriptor, size: Int(status.st_size))
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            break
        case S_IFCHR:
            return (file, nil)
        default:
            file.close()
            throw Failure(reason: "it is \(SystemReason.kind(status.st_mode)), not a regular file")
        }
        do throws(Failure) {
            if let lockPath {
                do {
                    file.lock = try WriterLock(acquiring: lockPath)
                } catch {
                    let reason =
                        error.isHeld ? error.reason : "its lock file \(lockPath) cannot be opened: \(error.reason)"
                    throw Failure(reason: reason, lockRefusal: error)
                }
            }
            if truncating {
                guard ftruncate(descriptor, 0) == 0 else { throw Failure(reason: SystemReason.current(path: path)) }
                file.size = 0
                return (file, nil)
            }
            let tail = try file.repairTail(savingTo: savePath)
            return (file, tail)
        } catch {
            file.close()
            throw error
        }
    }

    private init(path: String, descriptor: Int32, size: Int) {
        self.path = path
        self.descriptor = descriptor
        self.size = size
    }

    deinit {
        close()
    }

    /// Appends `data` in one write (repeated only if the system writes less); on failure, cuts the
    /// file back to where it was, so that no partial line stays in the middle of it.
    ///
    /// - Returns: The system's reason when it failed.
    func append(_ data: Data, sync: Bool) -> String? {
        guard descriptor >= 0 else { return "the file is closed" }
        if let failure = AppendFile.writeAll(data, to: descriptor) {
            // Cut a partial line away, but never lengthen a file someone else cut shorter.
            var status = stat()
            if fstat(descriptor, &status) == 0 && Int(status.st_size) > size {
                _ = ftruncate(descriptor, off_t(size))
            }
            return failure
        }
        size += data.count
        if sync && fsync(descriptor) != 0 { return String(cString: strerror(errno)) }
        return nil
    }

    /// Writes all of `data` to `descriptor`, retrying short and interrupted writes.
    ///
    /// - Returns: The system's reason when a write failed, or `nil`.
    static func writeAll(_ data: Data, to descriptor: Int32) -> String? {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += count
            }
            return nil
        }
    }

    /// Flushes the file to the disk.
    ///
    /// - Returns: The system's reason when it failed.
    func sync() -> String? {
        guard descriptor >= 0 else { return nil }
        return fsync(descriptor) == 0 ? nil : String(cString: strerror(errno))
    }

    /// Closes the file and releases its lock.
    func close() {
        if descriptor >= 0 { _ = closeFile(descriptor) }
        descriptor = -1
        lock?.release()
        lock = nil
    }

    // MARK: Torn tails

    /// Cuts away bytes after the last newline, and the last line if it is not JSON.
    private func repairTail(savingTo savePath: ((Int) -> String)?) throws(Failure) -> ActionLog.TornTail? {
        guard size > 0 else { return nil }
        let tailStart = try lineStart(before: size)
        var cut = size
        if tailStart < size, try byte(at: size - 1) != 0x0A {
            cut = tailStart
        }
        // The last complete line, if it is not JSON, was torn too (a crash can leave garbage).
        if cut > 0 {
            let start = try lineStart(before: cut - 1)
            let bytes = try read(from: start, count: cut - 1 - start)
            if !Self.isBlank(bytes) && (try? JSONDocument(bytes: bytes)) == nil {
                if start > 0 {
                    let previousStart = try lineStart(before: start - 1)
                    let previous = try read(from: previousStart, count: start - 1 - previousStart)
                    if !Self.isBlank(previous) && (try? JSONDocument(bytes: previous)) == nil {
                        throw Failure(
                            reason: "its last two lines are not JSON, so it is not a log a crash left behind",
                            isDamaged: true
                        )
                    }
                }
                cut = start
            }
        }
        guard cut < size else { return nil }
        let line = try lineCount(before: cut) + 1
        var saved: String?
        if let savePath {
            let target = savePath(cut)
            let bytes = try read(from: cut, count: size - cut)
            guard FileManager.default.createFile(atPath: target, contents: Data(bytes)) else {
                throw Failure(reason: "its torn tail could not be saved to \(target)")
            }
            saved = target
        }
        let tail = ActionLog.TornTail(line: line, byteOffset: cut, byteCount: size - cut, savedPath: saved)
        guard ftruncate(descriptor, off_t(cut)) == 0 else { throw Failure(reason: SystemReason.current(path: path)) }
        size = cut
        return tail
    }

    private static func isBlank(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
    }

    /// The offset just after the last newline before `end` (0 when there is none).
    ///
    /// - Throws: ``Failure`` when no newline comes within ``ActionLog/maximumLineLength`` bytes of
    ///   `end`: no line of a log is that long, so the file is not one (it is left as it was).
    private func lineStart(before end: Int) throws(Failure) -> Int {
        let limit = ActionLog.maximumLineLength
        var position = end
        while position > 0 {
            guard end - position <= limit else {
                throw Failure(
                    reason: "it holds more than \(LineReader.describe(size: limit)) without a newline before byte "
                        + "\(end), longer than a line may be, so it is not a log",
                    isDamaged: true
                )
            }
            let count = min(position, 1 << 20)
            let bytes = try read(from: position - count, count: count)
            if let newline = Self.lastNewline(in: bytes) { return position - count + newline + 1 }
            position -= count
        }
        return 0
    }

    /// The index of the last newline in `bytes`, found with `memchr`.
    private static func lastNewline(in bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { buffer in
            var last: Int?
            var from = 0
            while from < buffer.count, let found = memchr(buffer.baseAddress! + from, 0x0A, buffer.count - from) {
                last = buffer.baseAddress!.distance(to: found)
                from = last! + 1
            }
            return last
        }
    }

    private func lineCount(before end: Int) throws(Failure) -> Int {
        var count = 0
        var position = 0
        while position < end {
            let chunk = try read(from: position, count: min(end - position, 1 << 20))
            chunk.withUnsafeBytes { buffer in
                var from = 0
                while from < buffer.count, let found = memchr(buffer.baseAddress! + from, 0x0A, buffer.count - from) {
                    count += 1
                    from = buffer.baseAddress!.distance(to: found) + 1
                }
            }
            position += chunk.count
        }
        return count
    }

    private func byte(at offset: Int) throws(Failure) -> UInt8 {
        try read(from: offset, count: 1)[0]
    }

    private func read(from offset: Int, count: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let result = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset + done))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw Failure(reason: SystemReason.current(path: path))
            }
            if result == 0 { throw Failure(reason: "it is shorter than expected (did something cut it short?)") }
            done += result
        }
        return bytes
    }
}

/// `open(2)`, under a name that the methods of ``AppendFile`` do not hide.
private func openFile(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 {
    open(path, flags, mode)
}

/// `close(2)`, under a name that the methods of ``AppendFile`` do not hide.
private func closeFile(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
