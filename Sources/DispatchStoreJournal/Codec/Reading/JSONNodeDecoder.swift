import DispatchStore
import Foundation

/// A `Decoder` over a node of a ``JSONDocument``: decodes what `JSONEncoder` (default strategies)
/// wrote, at a fraction of `JSONDecoder`'s cost per small value.
///
/// It is a fast path, not a replacement: when it throws, callers decode again with `JSONDecoder`,
/// whose result (or error, with its message) then counts. So it may refuse anything it is not sure
/// of (an integer written with a fraction or an exponent, a number that underflows), and must never
/// succeed with a value `JSONDecoder` would not produce. A type may catch a refusal (`try?`) and
/// decode something else instead, so a refusal `JSONDecoder` might not make is remembered in the
/// ``Context``, and ``decode(_:from:at:)`` then throws ``Uncertain`` even when the type succeeded.
/// The differential test (`JSONDifferentialTests`) holds the two to the same answers.
final class JSONNodeDecoder: Decoder, SingleValueDecodingContainer {
    /// What one decoding shares: whether it refused a value `JSONDecoder` might have accepted.
    final class Context {
        var isUncertain = false
    }

    /// Thrown by ``decode(_:from:at:)`` when the value was decoded past a refusal `JSONDecoder` might
    /// not have made: decode it again with `JSONDecoder`.
    struct Uncertain: Error {}

    let document: JSONDocument
    let index: Int
    let context: Context
    /// The decoder of the enclosing value, and this value's key in it: the coding path, built only
    /// when asked for (an error, or a type that reads it).
    private let parent: JSONNodeDecoder?
    private let key: (any CodingKey)?

    var codingPath: [any CodingKey] {
        var path: [any CodingKey] = []
        var decoder: JSONNodeDecoder? = self
        while let current = decoder, let key = current.key {
            path.append(key)
            decoder = current.parent
        }
        return path.reversed()
    }

    var userInfo: [CodingUserInfoKey: Any] {
        [:]
    }

    init(
        document: JSONDocument,
        index: Int,
        parent: JSONNodeDecoder? = nil,
        key: (any CodingKey)? = nil,
        context: Context? = nil
    ) {
        self.document = document
        self.index = index
        self.parent = parent
        self.key = key
        self.context = context ?? parent?.context ?? Context()
    }

    /// The coding path of the value under `key` in this decoder's value.
    func path(_ key: any CodingKey) -> [any CodingKey] {
        codingPath + [key]
    }

    /// Decodes the value at node `index` of `document` as `type`.
    ///
    /// - Throws: The error that made decoding fail, or ``Uncertain`` when it succeeded past a
    ///   refusal `JSONDecoder` might not have made. Either way, decode with `JSONDecoder` instead.
    static func decode<Value: Decodable>(_ type: Value.Type, from document: JSONDocument, at index: Int) throws -> Value
    {
        let context = Context()
        let value = try decode(type, from: document, at: index, parent: nil, key: nil, context: context)
        if context.isUncertain { throw Uncertain() }
        return value
    }

    /// Decodes the value at node `index` as `type`, with `JSONDecoder`'s handling of `Data` (Base64),
    /// `URL` (a string) and `Decimal` (a number).
    static func decode<Value: Decodable>(
        _ type: Value.Type,
        from document: JSONDocument,
        at index: Int,
        parent: JSONNodeDecoder?,
        key: (any CodingKey)?,
        context: Context? = nil
    ) throws -> Value {
        func codingPath() -> [any CodingKey] {
            (parent?.codingPath ?? []) + (key.map { [$0] } ?? [])
        }
        if Value.self == String.self {
            return try string(document, index, codingPath) as! Value
        }
        if Value.self == Data.self {
            guard let text = document.string(at: index), let data = Data(base64Encoded: text) else {
                throw mismatch(Data.self, codingPath(), "expected a Base64 string")
            }
            return data as! Value
        }
        if Value.self == URL.self {
            guard let text = document.string(at: index), let url = URL(string: text) else {
                throw mismatch(URL.self, codingPath(), "expected a URL string")
            }
            return url as! Value
        }
        if Value.self == Decimal.self {
            guard let text = document.numberText(at: index), let decimal = Decimal(string: String(text)) else {
                throw mismatch(Decimal.self, codingPath(), "expected a number")
            }
            return decimal as! Value
        }
        return try Value(
            from: JSONNodeDecoder(document: document, index: index, parent: parent, key: key, context: context)
        )
    }

    // MARK: Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard document.nodes[index].kind == .object else {
            throw JSONNodeDecoder.mismatch([String: Any].self, codingPath, "expected an object")
        }
        // JSONDecoder refuses an object with a key that is not a string (a bad escape, not UTF-8).
        guard document.hasStringKeys(index) else {
            context.isUncertain = true
            throw JSONNodeDecoder.mismatch([String: Any].self, codingPath, "an object key is not a valid string")
        }
        return KeyedDecodingContainer(JSONKeyedContainer<Key>(decoder: self, object: index))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard document.nodes[index].kind == .array else {
            throw JSONNodeDecoder.mismatch([Any].self, codingPath, "expected an array")
        }
        return JSONUnkeyedContainer(decoder: self, array: index)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        self
    }

    // MARK: SingleValueDecodingContainer

    func decodeNil() -> Bool {
        document.nodes[index].kind == .null
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        try JSONNodeDecoder.bool(document, index, { self.codingPath })
    }

    func decode(_ type: String.Type) throws -> String {
        try JSONNodeDecoder.string(document, index, { self.codingPath })
    }

    // One generic method answers the protocol's ten integer requirements (`Int` to `UInt64`), one its
    // two floating-point ones: Swift takes a generic method as the witness of each. Inlined into each
    // witness, so that it is specialised for the type (a call to the generic one looked up metadata).

    @inline(__always)
    func decode<Value: FixedWidthInteger & Decodable>(_ type: Value.Type) throws -> Value {
        try integer(type, at: index) { codingPath }
    }

    @inline(__always)
    func decode<Value: BinaryFloatingPoint & LosslessStringConvertible & Decodable>(_ type: Value.Type) throws -> Value
    {
        try floatingPoint(type, at: index) { codingPath }
    }

    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try JSONNodeDecoder.decode(type, from: document, at: index, parent: parent, key: key, context: context)
    }

    // MARK: Scalars

    static func bool(_ document: JSONDocument, _ index: Int, _ path: () -> [any CodingKey]) throws -> Bool {
        switch document.nodes[index].kind {
        case .true: return true
        case .false: return false
        default: throw mismatch(Bool.self, path(), "expected a Boolean")
        }
    }

    static func string(_ document: JSONDocument, _ index: Int, _ path: () -> [any CodingKey]) throws -> String {
        guard let text = document.string(at: index) else { throw mismatch(String.self, path(), "expected a string") }
        return text
    }

    /// The whole number at node `index` of the document, as `Value`; `path` names it in an error.
    func integer<Value: FixedWidthInteger>(
        _ type: Value.Type,
        at index: Int,
        path: () -> [any CodingKey]
    ) throws -> Value {
        guard let (negative, magnitude) = document.integer(at: index) else {
            // JSONDecoder takes `1e2`, `100.0` and `-0.0` as whole numbers; this reader does not.
            if document.nodes[index].kind == .number { context.isUncertain = true }
            throw Self.mismatch(Value.self, path(), "expected a whole number")
        }
        if negative {
            guard Value.isSigned, magnitude <= UInt64(Int64.max) + 1 else {
                throw Self.mismatch(Value.self, path(), "number out of range")
            }
            let value = magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
            guard let result = Value(exactly: value) else {
                throw Self.mismatch(Value.self, path(), "number out of range")
            }
            return result
        }
        guard let result = Value(exactly: magnitude) else {
            throw Self.mismatch(Value.self, path(), "number out of range")
        }
        return result
    }

    /// The finite number at node `index` of the document, as `Value`; `path` names it in an error.
    func floatingPoint<Value: BinaryFloatingPoint & LosslessStringConvertible>(
        _ type: Value.Type,
        at index: Int,
        path: () -> [any CodingKey]
    ) throws -> Value {
        guard let text = document.numberText(at: index), let value = Value(String(text)), value.isFinite else {
            throw Self.mismatch(Value.self, path(), "expected a finite number")
        }
        // JSONDecoder refuses a number that underflows; where that starts is its own.
        if value.isSubnormal || (value == 0 && Self.mantissaIsNonzero(text)) {
            context.isUncertain = true
            throw Self.mismatch(Value.self, path(), "a number too close to zero")
        }
        return value
    }

    /// Whether the digits before the exponent of a number's text are not all zeros.
    private static func mantissaIsNonzero(_ text: Substring) -> Bool {
        text.prefix { $0 != "e" && $0 != "E" }.contains { $0 >= "1" && $0 <= "9" }
    }

    static func mismatch(_ type: Any.Type, _ path: [any CodingKey], _ description: String) -> DecodingError {
        .typeMismatch(type, DecodingError.Context(codingPath: path, debugDescription: description))
    }
}
