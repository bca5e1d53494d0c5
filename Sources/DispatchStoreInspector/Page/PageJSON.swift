import DispatchStoreJournal

/// JSON text for the page's embedded data, safe inside an HTML `<script>` element.
///
/// Every `<`, `>` and `&` in a string is written as a `\u` escape, and so are the line and paragraph
/// separators, so that no data can end the element (`</script>`), open a comment or be read as
/// markup: the page parses the element's text with `JSON.parse` and inserts every string as text.
///
/// Trees (``InspectedValue``) are written as tagged arrays, compact and unambiguous:
///
/// | value | JSON |
/// | --- | --- |
/// | null, booleans, strings | themselves |
/// | numbers | themselves when a double holds them exactly, else `["n", "digits"]` |
/// | text from reflection | `["t", "text"]` |
/// | object (struct, enum case) | `["o", key, value, ...]`, each key an index into the key table |
/// | dictionary | `["d", "key", value, ...]` |
/// | array | `["a", value, ...]` |
/// | set | `["s", "key", value, ...]`, or `["S", "member", ...]` when every member is a string |
struct PageJSON {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []
    /// The names of struct fields, each written once in the key table.
    private var keyIndex: [String: Int] = [:]
    private(set) var keyTable: [String] = []
    /// The number ``keyNumber(_:)`` gave last.
    private var lastKeyNumber = 0
    /// Whether object keys go through the key table (the page) or are written as strings (a
    /// dictionary key's or a set member's text, which must not depend on the page).
    private let usesKeyTable: Bool

    init(usesKeyTable: Bool = true) {
        self.usesKeyTable = usesKeyTable
    }

    /// The JSON of `tree` on its own, without a key table: how a set member or a dictionary key that
    /// is not a string or an integer is named.
    static func text(of tree: InspectedValue) -> String {
        var writer = PageJSON(usesKeyTable: false)
        writer.write(tree)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    // MARK: Scalars

    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func byte(_ character: Unicode.Scalar) {
        bytes.append(UInt8(ascii: character))
    }

    mutating func write(_ number: Int) {
        write(Int64(number))
    }

    mutating func write(_ number: Int64) {
        if number < 0 {
            bytes.append(UInt8(ascii: "-"))
            appendDigits(number.magnitude)
        } else {
            appendDigits(UInt64(number))
        }
    }

    mutating func write(_ number: UInt64) {
        appendDigits(number)
    }

    private mutating func appendDigits(_ value: UInt64) {
        JSONBytes.appendDecimal(value, to: &bytes)
    }

    /// A double as JSON: its shortest text that reads back the same.
    mutating func write(_ number: Double) {
        if number.isFinite {
            bytes.append(contentsOf: number.description.utf8)
        } else {
            raw("null")
        }
    }

    mutating func write(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        if string.withUTF8({ PageJSON.isPlain($0) }) {
            bytes.append(contentsOf: string.utf8)
        } else {
            for scalar in string.unicodeScalars {
                appendEscaped(scalar)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether the bytes need no escape: printable ASCII other than `"`, `\`, `<`, `>`, `&`.
    private static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in bytes {
            guard byte >= 0x20, byte < 0x7F, byte != 0x22, byte != 0x5C, byte != 0x3C, byte != 0x3E, byte != 0x26
            else { return false }
        }
        return true
    }

    private mutating func appendEscaped(_ scalar: Unicode.Scalar) {
        switch scalar {
        case "\"": raw("\\\"")
        case "\\": raw("\\\\")
        case "\n": raw("\\n")
        case "\r": raw("\\r")
        case "\t": raw("\\t")
        case "<", ">", "&", "\u{2028}", "\u{2029}", "\u{0}"..."\u{1F}", "\u{7F}":
            raw("\\u")
            let hex = Array("0123456789abcdef".utf8)
            let value = Int(scalar.value)
            for shift in [12, 8, 4, 0] {
                bytes.append(hex[(value >> shift) & 0xF])
            }
        default:
            bytes.append(contentsOf: String(scalar).utf8)
        }
    }

    // MARK: Trees

    /// Writes a tree in the page's tagged form.
    mutating func write(_ tree: InspectedValue) {
        switch tree {
        case .null: raw("null")
        case .bool(let value): value ? raw("true") : raw("false")
        case .integer(let value):
            if value.magnitude <= 1 << 53 {
                write(value)
            } else {
                tagged("n", String(value))
            }
        case .unsigned(let value):
            if value <= 1 << 53 {
                write(value)
            } else {
                tagged("n", String(value))
            }
        case .double(let value):
            if value.isFinite {
                write(value)
            } else {
                tagged("n", value.isNaN ? "nan" : value > 0 ? "inf" : "-inf")
            }
        case .string(let value): write(value)
        case .text(let value): tagged("t", value)
        case .node(let node): write(node)
        }
    }

    private mutating func tagged(_ tag: StaticString, _ text: String) {
        raw("[\"")
        raw(tag)
        raw("\",")
        write(text)
        raw("]")
    }

    private mutating func write(_ node: InspectedNode) {
        switch node.kind {
        case .object:
            raw("[\"o\"")
            for (index, key) in node.keys.enumerated() {
                byte(",")
                if usesKeyTable {
                    write(keyNumber(key))
                } else {
                    write(key)
                }
                byte(",")
                write(node.values[index])
            }
        case .dictionary, .set:
            let stringsOnly =
                node.kind == .set && node.values.allSatisfy { if case .string = $0 { true } else { false } }
            if stringsOnly {
                raw("[\"S\"")
                for key in node.keys {
                    byte(",")
                    write(key)
                }
            } else {
                node.kind == .set ? raw("[\"s\"") : raw("[\"d\"")
                for (index, key) in node.keys.enumerated() {
                    byte(",")
                    write(key)
                    byte(",")
                    write(node.values[index])
                }
            }
        case .array:
            raw("[\"a\"")
            for value in node.values {
                byte(",")
                write(value)
            }
        }
        byte("]")
    }

    /// The index of a struct field's name in the key table, adding it.
    mutating func keyNumber(_ key: String) -> Int {
        // A struct's fields come in the order they were first numbered: the one after the last
        // key, or the last key again, before a hash lookup.
        let next = lastKeyNumber + 1
        if next < keyTable.count, keyTable[next] == key {
            lastKeyNumber = next
            return next
        }
        if lastKeyNumber < keyTable.count, keyTable[lastKeyNumber] == key { return lastKeyNumber }
        if let number = keyIndex[key] {
            lastKeyNumber = number
            return number
        }
        lastKeyNumber = keyTable.count
        keyIndex[key] = keyTable.count
        keyTable.append(key)
        return keyTable.count - 1
    }

    /// Appends bytes written by another writer (which used no key table).
    mutating func append(_ other: [UInt8]) {
        bytes.append(contentsOf: other)
    }
}
