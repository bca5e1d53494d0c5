import DispatchStore

/// An array's elements, in order.
struct JSONUnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: JSONNodeDecoder
    let count: Int?
    private(set) var currentIndex = 0
    /// The node of the current element.
    private var element: Int

    init(decoder: JSONNodeDecoder, array: Int) {
        self.decoder = decoder
        self.count = decoder.document.nodes[array].count
        self.element = array + 1
    }

    var codingPath: [any CodingKey] {
        decoder.codingPath
    }

    var isAtEnd: Bool {
        currentIndex >= count!
    }

    private mutating func next<Value>(
        _ body: (JSONNodeDecoder, Int, ElementKey) throws -> Value
    ) throws -> Value {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                Value.self,
                DecodingError.Context(codingPath: codingPath, debugDescription: "the array has no more elements")
            )
        }
        let value = try body(decoder, element, ElementKey(intValue: currentIndex))
        element = decoder.document.nodes[element].next
        currentIndex += 1
        return value
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, decoder.document.nodes[element].kind == .null else { return false }
        element = decoder.document.nodes[element].next
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        try next { decoder, index, key in try JSONNodeDecoder.bool(decoder.document, index, { decoder.path(key) }) }
    }

    mutating func decode(_ type: String.Type) throws -> String {
        try next { decoder, index, key in try JSONNodeDecoder.string(decoder.document, index, { decoder.path(key) }) }
    }

    // As in the keyed container, one generic method each for the integer and floating-point types.

    @inline(__always)
    mutating func decode<Value: FixedWidthInteger & Decodable>(_ type: Value.Type) throws -> Value {
        try next { decoder, index, key in try decoder.integer(type, at: index) { decoder.path(key) } }
    }

    @inline(__always)
    mutating func decode<Value: BinaryFloatingPoint & LosslessStringConvertible & Decodable>(
        _ type: Value.Type
    ) throws -> Value {
        try next { decoder, index, key in try decoder.floatingPoint(type, at: index) { decoder.path(key) } }
    }

    mutating func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try next { decoder, index, key in
            try JSONNodeDecoder.decode(type, from: decoder.document, at: index, parent: decoder, key: key)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try next { decoder, index, key in
            try JSONNodeDecoder(document: decoder.document, index: index, parent: decoder, key: key).container(
                keyedBy: type
            )
        }
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next { decoder, index, key in
            try JSONNodeDecoder(document: decoder.document, index: index, parent: decoder, key: key).unkeyedContainer()
        }
    }

    mutating func superDecoder() throws -> any Decoder {
        try next { decoder, index, key in
            JSONNodeDecoder(document: decoder.document, index: index, parent: decoder, key: key)
        }
    }
}

/// The coding key of an array element: its index.
private struct ElementKey: CodingKey {
    let intValue: Int?

    init(intValue: Int) {
        self.intValue = intValue
    }

    init?(stringValue: String) {
        nil
    }

    var stringValue: String {
        "Index \(intValue!)"
    }
}
