import DispatchStore
import Foundation

// The containers of `PayloadValueEncoder`.

/// An object being written: each key and value goes to the writer as it comes.
struct PayloadKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: PayloadWriter
    let id: Int
    let path: PayloadPath?

    var codingPath: [any CodingKey] {
        PayloadPath.keys(of: path)
    }

    mutating func encodeNil(forKey key: Key) throws {
        guard writer.beginElement(of: id, key: key.stringValue) else { return }
        writer.bytes.append(contentsOf: "null".utf8)
    }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        guard writer.beginElement(of: id, key: key.stringValue) else { return }
        if try !writer.writeScalar(value) {
            let encoder = PayloadValueEncoder(writer: writer, path: PayloadPath(parent: path, key: key))
            try writer.write(value, into: encoder)
        }
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        guard writer.beginElement(of: id, key: key.stringValue) else { return }
        writer.writeString(value)
    }

    mutating func encode(_ value: Int, forKey key: Key) throws {
        guard writer.beginElement(of: id, key: key.stringValue) else { return }
        writer.writeInteger(value)
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        guard writer.beginElement(of: id, key: key.stringValue) else { return }
        writer.bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        guard writer.beginElement(of: id, key: key.stringValue) else { return }
        try writer.writeFloatingPoint(value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = writer.beginElement(of: id, key: key.stringValue) ? writer.openContainer(keyed: true) : 0
        return KeyedEncodingContainer(
            PayloadKeyedContainer<NestedKey>(writer: writer, id: nested, path: PayloadPath(parent: path, key: key))
        )
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = writer.beginElement(of: id, key: key.stringValue) ? writer.openContainer(keyed: false) : 0
        return PayloadUnkeyedContainer(writer: writer, id: nested, path: PayloadPath(parent: path, key: key))
    }

    mutating func superEncoder() -> any Encoder {
        writer.failed = true
        return PayloadValueEncoder(writer: writer, path: path)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        writer.failed = true
        return PayloadValueEncoder(writer: writer, path: path)
    }
}

/// An array being written: each element goes to the writer as it comes.
struct PayloadUnkeyedContainer: UnkeyedEncodingContainer {
    let writer: PayloadWriter
    let id: Int
    let path: PayloadPath?
    private(set) var count = 0

    init(writer: PayloadWriter, id: Int, path: PayloadPath?) {
        self.writer = writer
        self.id = id
        self.path = path
    }

    var codingPath: [any CodingKey] {
        PayloadPath.keys(of: path)
    }

    private mutating func nextPath() -> PayloadPath {
        defer { count += 1 }
        return PayloadPath(parent: path, key: PayloadIndexKey(intValue: count))
    }

    mutating func encodeNil() throws {
        count += 1
        guard writer.beginElement(of: id, key: nil) else { return }
        writer.bytes.append(contentsOf: "null".utf8)
    }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        guard writer.beginElement(of: id, key: nil) else { return }
        if try writer.writeScalar(value) {
            count += 1
        } else {
            try writer.write(value, into: PayloadValueEncoder(writer: writer, path: nextPath()))
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = writer.beginElement(of: id, key: nil) ? writer.openContainer(keyed: true) : 0
        return KeyedEncodingContainer(PayloadKeyedContainer<NestedKey>(writer: writer, id: nested, path: nextPath()))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = writer.beginElement(of: id, key: nil) ? writer.openContainer(keyed: false) : 0
        return PayloadUnkeyedContainer(writer: writer, id: nested, path: nextPath())
    }

    mutating func superEncoder() -> any Encoder {
        writer.failed = true
        return PayloadValueEncoder(writer: writer, path: path)
    }
}

/// One value, written at once.
struct PayloadSingleValueContainer: SingleValueEncodingContainer {
    let encoder: PayloadValueEncoder

    var codingPath: [any CodingKey] {
        encoder.codingPath
    }

    /// Whether the value may be written: a single value container holds one value.
    private func begin() -> Bool {
        guard encoder.slot == .empty, !encoder.writer.failed else {
            encoder.writer.failed = true
            return false
        }
        return true
    }

    mutating func encodeNil() throws {
        guard begin() else { return }
        encoder.writer.bytes.append(contentsOf: "null".utf8)
        encoder.slot = .single
    }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        guard begin() else { return }
        try encoder.writer.write(value, into: encoder)
    }
}
