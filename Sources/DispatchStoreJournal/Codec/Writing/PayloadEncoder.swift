import DispatchStore
import Foundation

/// Writes a record's payload: the JSON of an `Encodable` value, written as the value encodes it,
/// without the tree `JSONEncoder` builds first (for a small enum action, 13,000 instructions
/// against 22,000, callgrind).
///
/// The same JSON as `JSONEncoder` with `.withoutEscapingSlashes` writes, with one difference: keys in
/// the order the value encodes them (`JSONEncoder` writes them in its dictionary's order). Values
/// of the types `JSONEncoder` treats apart (`Date`, `Data`, `URL`, `Decimal`) are written by it.
/// Whenever a value uses its encoder in a way this writer cannot follow in one pass (a nested
/// container written to after its parent moved on, a super encoder, a key written twice, a value
/// that encodes nothing) or its encoding throws, the whole value is encoded again by `JSONEncoder`,
/// whose output or error is the answer.
enum PayloadEncoder {
    /// The JSON of `value`.
    ///
    /// - Throws: What `JSONEncoder` throws for it.
    static func encode(_ value: some Encodable) throws -> Data {
        let writer = PayloadWriter()
        let encoder = PayloadValueEncoder(writer: writer, path: nil)
        if (try? writer.write(value, into: encoder)) != nil, !writer.failed {
            writer.closeAll()
            return Data(writer.bytes)
        }
        return try fallback.encode(value)
    }

    /// The encoder of the values this writer does not write itself, and of those it gives up on.
    static let fallback: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()
}
