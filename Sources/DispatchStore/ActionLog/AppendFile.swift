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
/// Not thread-safe: its owner calls it under its own lock.
final class AppendFile {
    /// Why the file could not be opened or written: the system's reason.
    struct Failure: Error {
        let reason: String
        /// Whether the file holds more damage than a crash leaves (not only its last line).
        var isDamaged = false
    }

    let path: String
    private(set) var descriptor: Int32
    /// The file's length, where the next line goes.
    private(set) var size: Int

    /// Opens (or creates) `path`.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - truncating: Empty the file first.
    ///   - savePath: Where to save the bytes of a torn tail before cutting it away, given
    ///     its offset; `nil` cuts without saving.
    /// - Returns: The file, and the torn tail it cut away, if any.
    /// - Throws: ``Failure`` with the system's reason, or when more than the last line is damaged
    ///   (the file is then not a log, and is left as it was).
    static func open(
        path: String,
        truncating: Bool = false,
        savingTornTailTo savePath: ((Int) -> String)? = nil
    ) throws(Failure) -> (AppendFile, ActionLog.TornTail?) {
        let flags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | (truncating ? O_TRUNC : 0)
        let descriptor = openFile(path, flags, 0o644)
        guard descriptor >= 0 else { throw Failure(reason: String(cString: strerror(errno))) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = closeFile(descriptor)
            throw Failure(reason: reason)
        }
        let file = AppendFile(path: path, descriptor: descriptor, size: Int(status.st_size))
        guard (status.st_mode & S_IFMT) == S_IFREG else { return (file, nil) }
        do {
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
            _ = ftruncate(descriptor, off_t(size))
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

    func close() {
        if descriptor >= 0 { _ = closeFile(descriptor) }
        descriptor = -1
    }

    // MARK: Torn tails

    /// Cuts away bytes after the last newline, and the last line if it is not JSON.
    private func repairTail(savingTo savePath: ((Int) -> String)?) throws(Failure) -> ActionLog.TornTail? {
        guard size > 0 else { return nil }
        let tailStart = try lineStart(before: size)
        var cut = size
        var line = 0
        if tailStart < size, try byte(at: size - 1) != 0x0A {
            cut = tailStart
        }
        // The last complete line, if it is not JSON, was torn too (a crash can leave garbage).
        if cut > 0 {
            let start = try lineStart(before: cut - 1)
            let bytes = try read(from: start, count: cut - 1 - start)
            let blank = bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
            if !blank && (try? JSONDocument(bytes: bytes)) == nil {
                if start > 0 {
                    let previousStart = try lineStart(before: start - 1)
                    let previous = try read(from: previousStart, count: start - 1 - previousStart)
                    let previousBlank = previous.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
                    if !previousBlank && (try? JSONDocument(bytes: previous)) == nil {
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
        line = try lineCount(before: cut) + 1
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
        guard ftruncate(descriptor, off_t(cut)) == 0 else { throw Failure(reason: String(cString: strerror(errno))) }
        size = cut
        return tail
    }

    /// The offset just after the last newline before `end` (0 when there is none).
    private func lineStart(before end: Int) throws(Failure) -> Int {
        var position = end
        while position > 0 {
            let count = min(position, 64 << 10)
            let bytes = try read(from: position - count, count: count)
            if let newline = bytes.lastIndex(of: 0x0A) { return position - count + newline + 1 }
            position -= count
        }
        return 0
    }

    private func lineCount(before end: Int) throws(Failure) -> Int {
        var count = 0
        var position = 0
        while position < end {
            let chunk = try read(from: position, count: min(end - position, 1 << 20))
            count += chunk.reduce(0) { $0 + ($1 == 0x0A ? 1 : 0) }
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
                throw Failure(reason: String(cString: strerror(errno)))
            }
            if result == 0 { throw Failure(reason: "it is shorter than expected") }
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
