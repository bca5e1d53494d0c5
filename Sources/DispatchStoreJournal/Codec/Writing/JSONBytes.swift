/// The byte-level pieces of JSON that the record line (``ActionRecord``) and the payload encoder
/// both write (and the inspector's page, in `DispatchStoreInspector`).
package enum JSONBytes {
    /// Appends `value` in decimal digits.
    @inline(__always)
    package static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
        guard value >= 10 else {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        let start = bytes.count
        var rest = value
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
    }

    /// Whether `byte` stands for itself inside a JSON string: not a control character, a quote or a
    /// backslash.
    @inline(__always)
    static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }
}
