import DispatchStore
import Foundation

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
