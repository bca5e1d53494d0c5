import DispatchStore
import Foundation

/// The encoder of one value: the place where it goes in the output.
final class PayloadValueEncoder: Encoder {
    enum Slot: Equatable {
        case empty
        case keyed(Int)
        case unkeyed(Int)
        case single
    }

    let writer: PayloadWriter
    let path: PayloadPath?
    var slot = Slot.empty

    init(writer: PayloadWriter, path: PayloadPath?) {
        self.writer = writer
        self.path = path
    }

    var codingPath: [any CodingKey] {
        PayloadPath.keys(of: path)
    }

    var userInfo: [CodingUserInfoKey: Any] {
        [:]
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        switch slot {
        case .empty: slot = .keyed(writer.openContainer(keyed: true))
        case .keyed: break  // JSONEncoder gives the same container again (a subclass and its superclass)
        case .unkeyed, .single: writer.failed = true
        }
        let id = if case .keyed(let id) = slot { id } else { 0 }
        return KeyedEncodingContainer(PayloadKeyedContainer<Key>(writer: writer, id: id, path: path))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        switch slot {
        case .empty: slot = .unkeyed(writer.openContainer(keyed: false))
        case .unkeyed: break
        case .keyed, .single: writer.failed = true
        }
        let id = if case .unkeyed(let id) = slot { id } else { 0 }
        return PayloadUnkeyedContainer(writer: writer, id: id, path: path)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        PayloadSingleValueContainer(encoder: self)
    }
}
