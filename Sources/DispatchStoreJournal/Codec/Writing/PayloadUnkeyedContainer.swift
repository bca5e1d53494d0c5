import DispatchStore
import Foundation

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
        return PayloadPath(parent: path, key: PayloadPath.IndexKey(intValue: count))
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
