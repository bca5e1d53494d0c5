import DispatchStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One JSON text parsed into a flat array of nodes, for reading log records without Foundation's
/// `JSONDecoder`, which costs 4.5 times as many instructions per log line: 161,400 against 36,100
/// in dispatch-bench's L1J and L1 (one decoder for the log, each line decoded in one pass; callgrind,
/// scale 0.05), so that it misses L1's and L2's goals where this reader meets them (Performance.md).
///
/// It accepts what `JSONDecoder` accepts of a line that is strict JSON, plus one byte order mark
/// first and one comma ending a container's members, as `JSONDecoder` does; a `\u` escape takes
/// four bytes, checked when the string is read. The differential test (`JSONDifferentialTests`)
/// holds the two to the same answers.
///
/// Each node records where its bytes are and where its subtree ends, so that skipping a value or
/// finding an object's key costs no allocation. Objects' children are key and value nodes in turn.
struct JSONDocument {
    /// What a node is.
    enum Kind: UInt8 {
        /// A string of ASCII characters without escapes.
        case string
        /// A string without escapes, with bytes beyond ASCII (to be checked as UTF-8).
        case unicodeString
        /// A string with escapes.
        case escapedString
        case object, array, number, `true`, `false`, null
    }

    /// One value: a scalar's bytes, or a container and the extent of its subtree.
    struct Node {
        /// What the node is.
        var kind: Kind
        /// For strings, the first byte after the opening quote; otherwise the value's first byte.
        var start: Int
        /// For scalars, the byte count (for strings, without the quotes); for containers, the number
        /// of members (an object's key-value pairs).
        var count: Int
        /// The index of the first node after this one's subtree.
        var next: Int
    }

    /// Why a text is not JSON: a phrase and the byte offset where it became clear.
    struct SyntaxError: Error {
        let reason: String
        let offset: Int
    }

    /// The text.
    let bytes: [UInt8]
    /// The nodes in document order; the first is the root.
    private(set) var nodes: [Node] = []

    /// Parses `bytes`, which must hold exactly one JSON value (surrounding white space allowed, and
    /// one byte order mark first).
    ///
    /// - Parameters:
    ///   - bytes: The text.
    ///   - spare: An array to fill with the nodes, emptied first: one from ``recycledNodes()``,
    ///     so that parsing line after line does not allocate each time.
    /// - Throws: ``SyntaxError`` naming the byte where the text stops being JSON.
    init(bytes: [UInt8], reusing spare: [Node] = []) throws(SyntaxError) {
        self.bytes = bytes
        nodes = spare
        nodes.removeAll(keepingCapacity: true)
        nodes.reserveCapacity(32)
        var position = 0
        // One byte order mark may come first, as JSONDecoder allows.
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        try bytes.withUnsafeBufferPointer { (buffer: UnsafeBufferPointer<UInt8>) throws(SyntaxError) in
            var parser = JSONParser(bytes: buffer, position: start)
            try parser.value(into: &nodes, depth: 0)
            parser.skipWhiteSpace()
            position = parser.position
        }
        guard position == bytes.count else {
            throw SyntaxError(reason: "unexpected text after the JSON value", offset: position)
        }
    }

    /// The node array, for the next document to reuse.
    consuming func recycledNodes() -> [Node] {
        nodes
    }

    /// The string value of node `index`, unescaped; `nil` if it is not a string or not valid UTF-8.
    func string(at index: Int) -> String? {
        let node = nodes[index]
        switch node.kind {
        case .string:
            // ASCII, so valid UTF-8: no validation. (`String(validating:as:)` is generic over the
            // encoding in the standard library, and looks its result's type up on every call.)
            return bytes.withUnsafeBufferPointer { buffer in
                String(
                    decoding: UnsafeBufferPointer(rebasing: buffer[node.start..<node.start + node.count]),
                    as: UTF8.self
                )
            }
        case .unicodeString:
            return bytes.withUnsafeBufferPointer { buffer in
                String(
                    validating: UnsafeBufferPointer(rebasing: buffer[node.start..<node.start + node.count]),
                    as: UTF8.self
                )
            }
        case .escapedString:
            return unescaped(node)
        default:
            return nil
        }
    }

    /// Whether node `index` is a string equal to `text`: for ASCII, compared byte by byte without
    /// allocating; otherwise as Swift compares strings (canonically equivalent ones are equal), as
    /// `JSONDecoder` matches keys.
    func stringEquals(_ index: Int, _ text: String) -> Bool {
        let node = nodes[index]
        guard node.kind == .string else {
            return (node.kind == .unicodeString || node.kind == .escapedString) && string(at: index) == text
        }
        var text = text
        return text.withUTF8 { utf8 in
            guard utf8.count == node.count else { return false }
            return bytes.withUnsafeBufferPointer { buffer in
                memcmp(buffer.baseAddress! + node.start, utf8.baseAddress!, node.count) == 0
            }
        }
    }

    /// The text of a number node.
    func numberText(at index: Int) -> Substring? {
        let node = nodes[index]
        guard node.kind == .number else { return nil }
        return Substring(decoding: bytes[node.start..<node.start + node.count], as: UTF8.self)
    }

    /// The value of an integer number node, if it is one that fits in 64 bits (signed or not).
    func integer(at index: Int) -> (negative: Bool, magnitude: UInt64)? {
        let node = nodes[index]
        guard node.kind == .number else { return nil }
        var position = node.start
        let end = node.start + node.count
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        var magnitude: UInt64 = 0
        while position < end {
            let digit = bytes[position] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow && !carry else { return nil }
            magnitude = sum
            position += 1
        }
        return (negative, magnitude)
    }

    /// Whether every key of the object at `index` is a valid string (its escapes and UTF-8), as
    /// `JSONDecoder` requires of an object it reads.
    func hasStringKeys(_ index: Int) -> Bool {
        var child = index + 1
        for _ in 0..<nodes[index].count {
            if nodes[child].kind != .string && string(at: child) == nil { return false }
            child = nodes[child + 1].next
        }
        return true
    }

    /// The node index of the value stored under `key` in the object at `index`, if any: the first,
    /// as `JSONDecoder` takes it, when the key is given more than once.
    func member(_ key: String, in index: Int) -> Int? {
        var child = index + 1
        for _ in 0..<nodes[index].count {
            if stringEquals(child, key) { return child + 1 }
            child = nodes[child + 1].next
        }
        return nil
    }

    private func unescaped(_ node: Node) -> String? {
        var scalars = String.UnicodeScalarView()
        var utf8: [UInt8] = []
        var highBits: UInt8 = 0
        var position = node.start
        let end = node.start + node.count
        func flush() -> Bool {
            guard !utf8.isEmpty else { return true }
            // ASCII needs no validation (see `string(at:)`).
            let text =
                highBits & 0x80 == 0 ? String(decoding: utf8, as: UTF8.self) : String(validating: utf8, as: UTF8.self)
            guard let text else { return false }
            scalars.append(contentsOf: text.unicodeScalars)
            utf8.removeAll(keepingCapacity: true)
            highBits = 0
            return true
        }
        while position < end {
            let byte = bytes[position]
            guard byte == UInt8(ascii: "\\") else {
                utf8.append(byte)
                highBits |= byte
                position += 1
                continue
            }
            guard flush() else { return nil }
            let escape = bytes[position + 1]
            position += 2
            switch escape {
            case UInt8(ascii: "\""): scalars.append("\"")
            case UInt8(ascii: "\\"): scalars.append("\\")
            case UInt8(ascii: "/"): scalars.append("/")
            case UInt8(ascii: "b"): scalars.append("\u{8}")
            case UInt8(ascii: "f"): scalars.append("\u{C}")
            case UInt8(ascii: "n"): scalars.append("\n")
            case UInt8(ascii: "r"): scalars.append("\r")
            case UInt8(ascii: "t"): scalars.append("\t")
            case UInt8(ascii: "u"):
                guard let high = hexValue(at: position, end: end) else { return nil }
                position += 4
                var value = high
                if (0xD800..<0xDC00).contains(high) {
                    guard position + 6 <= end, bytes[position] == UInt8(ascii: "\\"),
                        bytes[position + 1] == UInt8(ascii: "u"),
                        let low = hexValue(at: position + 2, end: end), (0xDC00..<0xE000).contains(low)
                    else { return nil }
                    position += 6
                    value = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(value) else { return nil }
                scalars.append(scalar)
            default:
                return nil
            }
        }
        guard flush() else { return nil }
        return String(scalars)
    }

    private func hexValue(at position: Int, end: Int) -> UInt32? {
        guard position + 4 <= end else { return nil }
        var value: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}
