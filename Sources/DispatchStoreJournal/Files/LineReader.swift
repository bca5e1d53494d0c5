#if canImport(Glibc)
import DispatchStore
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file one line at a time through a buffer: memory holds the buffer and the current line,
/// whatever the file's length, and a line longer than ``ActionLog/maximumLineLength`` is an error
/// once that many bytes were read, so that a file without newlines (`/dev/zero`) cannot exhaust
/// memory or time.
///
/// Pipes and devices are read too (a log can come through `<(zcat log.gz)`). A regular file that
/// ends before the size it had when it was opened was cut short while it was read: that is an error,
/// not a quiet end.
final class LineReader {
    /// One line, without its newline.
    struct Line {
        /// Its number, counting from 1.
        let number: Int
        /// The offset of its first byte in the file.
        let offset: Int
        /// Its bytes.
        let bytes: [UInt8]
        /// Whether a newline ends it; only the last line of a file may lack one.
        let isTerminated: Bool

        /// Whether it holds only white space.
        var isBlank: Bool {
            bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        }
    }

    /// Why the file could not be read: the system's reason, or what is wrong with it.
    struct Failure: Error {
        let reason: String
        /// Whether a line was longer than the reader's limit.
        var isLineTooLong = false
    }

    let path: String
    /// The longest line accepted, in bytes.
    let maximumLineLength: Int
    private let descriptor: Int32
    /// A regular file's size when it was opened; `nil` for pipes and devices.
    private let sizeAtOpen: Int?
    private var buffer: UnsafeMutableRawBufferPointer
    /// The unread bytes are `buffer[start..<end]`; those before `scanned` hold no newline.
    private var start = 0
    private var end = 0
    private var scanned = 0
    private var atEndOfFile = false
    private var number = 0
    /// The offset in the file of `buffer[start]`.
    private var offset = 0

    /// Opens `path` for reading.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - bufferSize: Bytes read per system call, at first; the buffer grows for a longer line.
    ///   - maximumLineLength: The longest line accepted.
    /// - Throws: ``Failure`` with the system's reason naming what is wrong (see ``SystemReason``),
    ///   or for a directory.
    init(
        path: String,
        bufferSize: Int = 64 << 10,
        maximumLineLength: Int = ActionLog.maximumLineLength
    ) throws(Failure) {
        self.path = path
        self.maximumLineLength = maximumLineLength
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(reason: SystemReason.current(path: path)) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let reason = SystemReason.current(path: path)
            close(descriptor)
            throw Failure(reason: reason)
        }
        if (status.st_mode & S_IFMT) == S_IFDIR {
            close(descriptor)
            throw Failure(reason: "it is a directory")
        }
        sizeAtOpen = (status.st_mode & S_IFMT) == S_IFREG ? Int(status.st_size) : nil
        let capacity = min(bufferSize, maximumLineLength + 1)
        guard let memory = malloc(capacity) else {
            close(descriptor)
            throw Failure(reason: "no memory for a buffer of \(capacity) bytes")
        }
        buffer = UnsafeMutableRawBufferPointer(start: memory, count: capacity)
    }

    deinit {
        close(descriptor)
        free(buffer.baseAddress)
    }

    /// The next line, or `nil` at the end of the file.
    ///
    /// - Throws: ``Failure`` when reading fails, a line is longer than ``maximumLineLength``, or the
    ///   file was cut short while it was read.
    func next() throws(Failure) -> Line? {
        while true {
            if scanned < end, let found = memchr(buffer.baseAddress! + scanned, 0x0A, end - scanned) {
                return take(upTo: buffer.baseAddress!.distance(to: found), terminated: true)
            }
            scanned = end
            if atEndOfFile {
                return start < end ? take(upTo: end, terminated: false) : nil
            }
            try fill()
        }
    }

    private func take(upTo index: Int, terminated: Bool) -> Line {
        number += 1
        let bytes = [UInt8](UnsafeRawBufferPointer(rebasing: buffer[start..<index]))
        let line = Line(number: number, offset: offset, bytes: bytes, isTerminated: terminated)
        let consumed = index - start + (terminated ? 1 : 0)
        offset += consumed
        start += consumed
        scanned = start
        return line
    }

    /// Reads more of the file after the unread bytes, moving them to the front or growing the
    /// buffer when a line fills it.
    private func fill() throws(Failure) {
        let unread = end - start
        guard unread <= maximumLineLength else {
            throw Failure(
                reason: "line \(number + 1) is longer than \(Self.describe(size: maximumLineLength)), the most a "
                    + "line may hold",
                isLineTooLong: true
            )
        }
        if start > 0 {
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: unread)
            start = 0
            end = unread
            scanned = unread
        }
        if end == buffer.count {
            // `realloc` moves a large block by remapping its pages: no copy, and no second block.
            let capacity = min(buffer.count * 2, maximumLineLength + 1)
            guard let grown = realloc(buffer.baseAddress, capacity) else {
                throw Failure(reason: "no memory for line \(number + 1), longer than \(buffer.count) bytes")
            }
            buffer = UnsafeMutableRawBufferPointer(start: grown, count: capacity)
        }
        while true {
            let count = read(descriptor, buffer.baseAddress! + end, buffer.count - end)
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(reason: SystemReason.current(path: path))
            }
            if count == 0 {
                atEndOfFile = true
                let length = offset + end - start
                if let sizeAtOpen, length < sizeAtOpen {
                    throw Failure(
                        reason: "it was cut short while it was read: it held \(sizeAtOpen) bytes when it was "
                            + "opened, and ended after \(length)"
                    )
                }
            }
            end += count
            return
        }
    }

    /// A size in words: `64 MiB`, `1,000 bytes`.
    static func describe(size: Int) -> String {
        size >= 1 << 20 && size % (1 << 20) == 0 ? "\(size >> 20) MiB" : "\(size) bytes"
    }
}
