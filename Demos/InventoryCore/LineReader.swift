import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads lines from a file descriptor as bytes, so that a line that is not UTF-8, or too long to
/// hold, is reported as such instead of being repaired or read whole.
///
/// `readLine()` replaces invalid UTF-8 with U+FFFD and keeps a line of any length in memory; this
/// reader keeps at most ``maximumLength`` bytes of a line and skips the rest of a longer one.
///
/// - Note: Not thread-safe: one thread reads.
public struct LineReader {
    /// One line of input, without its line break (`\n` or `\r\n`).
    public enum Line: Equatable, Sendable {
        /// A line of valid UTF-8.
        case text(String)
        /// A line that is not valid UTF-8.
        case invalidUTF8
        /// A line longer than the limit, skipped; `bytes` is its length.
        case tooLong(bytes: Int)
    }

    /// The longest line the service reads, in bytes.
    public static let defaultMaximumLength = 65_536

    /// The longest line returned as text, in bytes.
    public let maximumLength: Int
    /// Fills the start of a buffer with input; returns the count, 0 at the end.
    private let source: (UnsafeMutableRawBufferPointer) -> Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false

    /// Creates a reader of `fileDescriptor` (standard input by default).
    ///
    /// - Parameters:
    ///   - fileDescriptor: The descriptor to read; it is not closed.
    ///   - maximumLength: The longest line returned as text, in bytes.
    public init(fileDescriptor: Int32 = 0, maximumLength: Int = defaultMaximumLength) {
        self.init(maximumLength: maximumLength) { buffer in
            while true {
                let count = read(fileDescriptor, buffer.baseAddress, buffer.count)
                if count < 0 && errno == EINTR { continue }
                return max(count, 0)
            }
        }
    }

    /// Creates a reader of the bytes `read` puts in the buffer it is given, returning how many (0 at
    /// the end): for tests.
    ///
    /// - Parameters:
    ///   - maximumLength: The longest line returned as text, in bytes.
    ///   - read: Fills the start of the buffer and returns the count, 0 at the end of input.
    public init(maximumLength: Int = defaultMaximumLength, read: @escaping (UnsafeMutableRawBufferPointer) -> Int) {
        precondition(maximumLength > 0, "LineReader's maximumLength must be positive, not \(maximumLength)")
        self.maximumLength = maximumLength
        self.source = read
    }

    /// The next line, or `nil` at the end of input.
    ///
    /// - Returns: The line as text, or why it is not text.
    public mutating func next() -> Line? {
        var skipped = 0
        while true {
            if let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                let length = skipped + (newline - start)
                if length > maximumLength {
                    start = newline + 1
                    return .tooLong(bytes: length)
                }
                if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = Self.decode(buffer[start..<end])
                start = newline + 1
                return line
            }
            if ended {
                guard start < buffer.count || skipped > 0 else { return nil }
                let length = skipped + buffer.count - start
                let rest = buffer[start...]
                start = buffer.count
                return length > maximumLength ? .tooLong(bytes: length) : Self.decode(rest)
            }
            // Keep at most one more byte than a line may hold: the rest of a longer line is only counted.
            if buffer.count - start > maximumLength {
                skipped += buffer.count - start
                start = buffer.count
            }
            buffer.removeSubrange(0..<start)
            start = 0
            fill()
        }
    }

    private mutating func fill() {
        let chunk = 65_536
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        let count = buffer.withUnsafeMutableBytes { bytes in
            source(UnsafeMutableRawBufferPointer(rebasing: bytes[old...]))
        }
        buffer.removeLast(chunk - count)
        if count == 0 { ended = true }
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> Line {
        String(bytes: bytes, encoding: .utf8).map(Line.text) ?? .invalidUTF8
    }
}
