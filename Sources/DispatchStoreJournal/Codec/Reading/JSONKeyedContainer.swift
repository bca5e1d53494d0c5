import DispatchStore

/// An object's members, looked up by comparing key bytes.
struct JSONKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: JSONNodeDecoder
    let object: Int

    var codingPath: [any CodingKey] {
        decoder.codingPath
    }

    var allKeys: [Key] {
        let document = decoder.document
        var keys: [Key] = []
        var child = object + 1
        for _ in 0..<document.nodes[object].count {
            if let name = document.string(at: child) {
                if let key = Key(stringValue: name) { keys.append(key) }
            } else {
                // A key that is not UTF-8: JSONDecoder refuses the object.
                decoder.context.isUncertain = true
            }
            child = document.nodes[child + 1].next
        }
        return keys
    }

    func contains(_ key: Key) -> Bool {
        decoder.document.member(key.stringValue, in: object) != nil
    }

    private func value(for key: Key) throws -> Int {
        guard let index = decoder.document.member(key.stringValue, in: object) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(codingPath: codingPath, debugDescription: "no value for \(key.stringValue)")
            )
        }
        return index
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        decoder.document.nodes[try value(for: key)].kind == .null
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try JSONNodeDecoder.bool(decoder.document, try value(for: key), { decoder.path(key) })
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try JSONNodeDecoder.string(decoder.document, try value(for: key), { decoder.path(key) })
    }

    // One generic method answers the protocol's ten integer requirements (`Int` to `UInt64`), one its
    // two floating-point ones: Swift takes a generic method as the witness of each. Inlined into each
    // witness, so that it is specialised for the type (a call to the generic one looked up metadata).

    @inline(__always)
    func decode<Value: FixedWidthInteger & Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
        try decoder.integer(type, at: try value(for: key)) { decoder.path(key) }
    }

    @inline(__always)
    func decode<Value: BinaryFloatingPoint & LosslessStringConvertible & Decodable>(
        _ type: Value.Type,
        forKey key: Key
    ) throws -> Value {
        try decoder.floatingPoint(type, at: try value(for: key)) { decoder.path(key) }
    }

    func decode<Value: Decodable>(_ type: Value.Type, forKey key: Key) throws -> Value {
        try JSONNodeDecoder.decode(type, from: decoder.document, at: try value(for: key), parent: decoder, key: key)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try JSONNodeDecoder(document: decoder.document, index: try value(for: key), parent: decoder, key: key)
            .container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONNodeDecoder(document: decoder.document, index: try value(for: key), parent: decoder, key: key)
            .unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(forKey: Key(stringValue: "super")!)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONNodeDecoder(document: decoder.document, index: try value(for: key), parent: decoder, key: key)
    }
}
