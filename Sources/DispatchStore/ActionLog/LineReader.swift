#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file one line at a time through a buffer of fixed size: memory holds one buffer and the
/// current line, whatever the file's length.
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

    /// Why the file could not be read: the system's reason.
    struct Failure: Error {
        let reason: String
    }

    /// The longest line accepted, so that a file without newlines cannot exhaust memory.
    static let maximumLineLength = 64 << 20

    let path: String
    private let descriptor: Int32
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    private var atEndOfFile = false
    private var number = 0
    private var offset = 0

    /// Opens `path` for reading.
    ///
    /// - Parameters:
    ///   - path: The file.
    ///   - bufferSize: Bytes read per system call.
    /// - Throws: ``Failure`` with the system's reason.
    init(path: String, bufferSize: Int = 1 << 20) throws(Failure) {
        self.path = path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(reason: String(cString: strerror(errno))) }
        var status = stat()
        if fstat(descriptor, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR {
            close(descriptor)
            throw Failure(reason: "it is a directory")
        }
        buffer = [UInt8](repeating: 0, count: bufferSize)
    }

    deinit {
        close(descriptor)
    }

    /// The next line, or `nil` at the end of the file.
    ///
    /// - Throws: ``Failure`` when reading fails or a line is longer than ``maximumLineLength``.
    func next() throws(Failure) -> Line? {
        while true {
            let newline: Int? = buffer.withUnsafeBufferPointer { pointer in
                guard start < end, let found = memchr(pointer.baseAddress! + start, 0x0A, end - start) else {
                    return nil
                }
                return pointer.baseAddress!.distance(to: found.assumingMemoryBound(to: UInt8.self))
            }
            if let newline {
                return take(upTo: newline, terminated: true)
            }
            if atEndOfFile {
                return start < end ? take(upTo: end, terminated: false) : nil
            }
            try fill()
        }
    }

    private func take(upTo index: Int, terminated: Bool) -> Line {
        number += 1
        let line = Line(number: number, offset: offset, bytes: Array(buffer[start..<index]), isTerminated: terminated)
        let consumed = index - start + (terminated ? 1 : 0)
        offset += consumed
        start += consumed
        return line
    }

    /// Reads more of the file after the unread bytes, moving them to the front or growing the
    /// buffer when a line fills it.
    private func fill() throws(Failure) {
        if start > 0 {
            let unread = end - start
            buffer.withUnsafeMutableBufferPointer { pointer in
                _ = memmove(pointer.baseAddress!, pointer.baseAddress! + start, unread)
            }
            start = 0
            end = unread
        }
        if end == buffer.count {
            guard buffer.count < LineReader.maximumLineLength else {
                throw Failure(reason: "line \(number + 1) is longer than \(LineReader.maximumLineLength >> 20) MB")
            }
            buffer.append(contentsOf: repeatElement(0, count: buffer.count))
        }
        while true {
            let count = buffer.withUnsafeMutableBufferPointer { pointer in
                read(descriptor, pointer.baseAddress! + end, pointer.count - end)
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(reason: String(cString: strerror(errno)))
            }
            if count == 0 { atEndOfFile = true }
            end += count
            return
        }
    }
}
