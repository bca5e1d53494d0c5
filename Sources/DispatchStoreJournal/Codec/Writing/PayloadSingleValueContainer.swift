import DispatchStore
import Foundation

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
