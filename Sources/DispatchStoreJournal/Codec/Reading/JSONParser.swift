#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The recursive-descent parser behind ``JSONDocument``.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var position: Int

    /// Nesting deeper than this is refused rather than risking the stack on garbage input.
    static let maximumDepth = 512

    mutating func skipWhiteSpace() {
        while position < bytes.count {
            switch bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): position += 1
            default: return
            }
        }
    }

    func error(_ reason: String) -> JSONDocument.SyntaxError {
        JSONDocument.SyntaxError(reason: reason, offset: position)
    }

    mutating func value(into nodes: inout [JSONDocument.Node], depth: Int) throws(JSONDocument.SyntaxError) {
        skipWhiteSpace()
        guard position < bytes.count else { throw error("the text ends where a value should be") }
        guard depth < JSONParser.maximumDepth else { throw error("values are nested too deeply") }
        switch bytes[position] {
        case UInt8(ascii: "{"): try container(object: true, into: &nodes, depth: depth)
        case UInt8(ascii: "["): try container(object: false, into: &nodes, depth: depth)
        case UInt8(ascii: "\""): try string(into: &nodes)
        case UInt8(ascii: "t"): try literal("true", .true, into: &nodes)
        case UInt8(ascii: "f"): try literal("false", .false, into: &nodes)
        case UInt8(ascii: "n"): try literal("null", .null, into: &nodes)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): try number(into: &nodes)
        default: throw error("unexpected character where a value should be")
        }
    }

    private mutating func container(
        object: Bool,
        into nodes: inout [JSONDocument.Node],
        depth: Int
    ) throws(JSONDocument.SyntaxError) {
        let index = nodes.count
        nodes.append(JSONDocument.Node(kind: object ? .object : .array, start: position, count: 0, next: 0))
        position += 1
        let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
        var count = 0
        skipWhiteSpace()
        if position < bytes.count && bytes[position] == close {
            position += 1
        } else {
            while true {
                if object {
                    skipWhiteSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw error("an object key must be a string")
                    }
                    try string(into: &nodes)
                    skipWhiteSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                        throw error("a colon must follow an object key")
                    }
                    position += 1
                }
                try value(into: &nodes, depth: depth + 1)
                count += 1
                skipWhiteSpace()
                guard position < bytes.count else { throw error("the text ends inside a container") }
                if bytes[position] == UInt8(ascii: ",") {
                    position += 1
                    // One comma may end the members, as JSONDecoder allows: `[1, 2,]`.
                    skipWhiteSpace()
                    if position < bytes.count && bytes[position] == close {
                        position += 1
                        break
                    }
                } else if bytes[position] == close {
                    position += 1
                    break
                } else {
                    throw error(object ? "expected a comma or } in an object" : "expected a comma or ] in an array")
                }
            }
        }
        nodes[index].count = count
        nodes[index].next = nodes.count
    }

    private mutating func string(into nodes: inout [JSONDocument.Node]) throws(JSONDocument.SyntaxError) {
        position += 1
        let start = position
        var escaped = false
        var highBits: UInt8 = 0
        while true {
            guard position < bytes.count else { throw error("the text ends inside a string") }
            let byte = bytes[position]
            highBits |= byte
            if byte == UInt8(ascii: "\"") { break }
            if byte < 0x20 { throw error("a control character inside a string") }
            if byte == UInt8(ascii: "\\") {
                escaped = true
                position += 1
                guard position < bytes.count else { throw error("the text ends inside a string") }
                // `\u` takes the four bytes after it, as JSONDecoder's scanner does: any but a
                // quote; they are checked to be hexadecimal when the string is read.
                if bytes[position] == UInt8(ascii: "u") {
                    guard position + 4 < bytes.count else { throw error("the text ends inside a string") }
                    for _ in 0..<4 {
                        position += 1
                        if bytes[position] == UInt8(ascii: "\"") { throw error("a \\u escape is cut short") }
                    }
                }
            }
            position += 1
        }
        nodes.append(
            JSONDocument.Node(
                kind: escaped ? .escapedString : highBits & 0x80 == 0 ? .string : .unicodeString,
                start: start,
                count: position - start,
                next: nodes.count + 1
            )
        )
        position += 1
    }

    private mutating func literal(
        _ text: StaticString,
        _ kind: JSONDocument.Kind,
        into nodes: inout [JSONDocument.Node]
    ) throws(JSONDocument.SyntaxError) {
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count,
            memcmp(bytes.baseAddress! + position, text.utf8Start, count) == 0
        else { throw error("unexpected character where a value should be") }
        nodes.append(JSONDocument.Node(kind: kind, start: position, count: count, next: nodes.count + 1))
        position += count
    }

    private mutating func number(into nodes: inout [JSONDocument.Node]) throws(JSONDocument.SyntaxError) {
        let start = position
        func digits(_ parser: inout JSONParser) -> Int {
            let first = parser.position
            while parser.position < parser.bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(parser.bytes[parser.position])
            {
                parser.position += 1
            }
            return parser.position - first
        }
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerStart = position
        let integerDigits = digits(&self)
        guard integerDigits > 0 else { throw error("a number needs digits") }
        if integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0") {
            throw JSONDocument.SyntaxError(reason: "a number has a leading zero", offset: integerStart + 1)
        }
        if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits(&self) > 0 else { throw error("a number needs digits after its decimal point") }
        }
        if position < bytes.count && (bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")) {
            position += 1
            if position < bytes.count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-"))
            {
                position += 1
            }
            guard digits(&self) > 0 else { throw error("a number needs digits in its exponent") }
        }
        nodes.append(JSONDocument.Node(kind: .number, start: start, count: position - start, next: nodes.count + 1))
    }
}
