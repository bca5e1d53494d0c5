import DispatchStore
import Foundation

/// The bytes written so far and the containers still open, innermost last.
///
/// Its properties are only touched by the encoding that made it, on one thread: exclusivity is
/// not checked at run time (the checks cost as much as the writing).
final class PayloadWriter {
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// Set when the value used its encoder in a way this writer cannot follow: the caller then
    /// encodes it with `JSONEncoder`.
    @exclusivity(unchecked) var failed = false
    /// The open containers: an id, whether it is an object, how many values it holds, where its
    /// keys start in `keys`.
    @exclusivity(unchecked) private var open: [(id: Int, keyed: Bool, count: Int, keysStart: Int)] = []
    /// The keys of the open objects, outermost first.
    @exclusivity(unchecked) private var keys: [String] = []
    @exclusivity(unchecked) private var nextID = 0

    init() {
        bytes.reserveCapacity(64)
    }

    /// Opens an object or an array where a value goes, and returns its id.
    func openContainer(keyed: Bool) -> Int {
        nextID += 1
        open.append((nextID, keyed, 0, keys.count))
        bytes.append(keyed ? UInt8(ascii: "{") : UInt8(ascii: "["))
        return nextID
    }

    /// Makes `id` the innermost open container (closing those inside it) and writes the separator
    /// and, in an object, the key of its next value.
    ///
    /// - Returns: `false` when `id` was closed already, or the key is written twice.
    func beginElement(of id: Int, key: String?) -> Bool {
        guard !failed else { return false }
        while let last = open.last, last.id != id {
            close()
        }
        guard !open.isEmpty else {
            failed = true
            return false
        }
        let index = open.count - 1
        if open[index].count > 0 { bytes.append(UInt8(ascii: ",")) }
        open[index].count += 1
        if let key {
            // A key written twice: JSONEncoder keeps the last value, which one pass cannot do.
            if keys[open[index].keysStart...].contains(key) {
                failed = true
                return false
            }
            keys.append(key)
            writeString(key)
            bytes.append(UInt8(ascii: ":"))
        }
        return true
    }

    func closeAll() {
        while !open.isEmpty { close() }
    }

    private func close() {
        let last = open.removeLast()
        keys.removeSubrange(last.keysStart...)
        bytes.append(last.keyed ? UInt8(ascii: "}") : UInt8(ascii: "]"))
    }

    // MARK: Values

    /// Writes `value` at the current place, through `encoder` when it is not a scalar.
    func write<Value: Encodable>(_ value: Value, into encoder: PayloadValueEncoder) throws {
        if try writeScalar(value) {
            encoder.slot = .single
        } else {
            try value.encode(to: encoder)
            if encoder.slot == .empty { failed = true }
        }
    }

    /// Writes `value` at the current place when it is a scalar, or a value `JSONEncoder` treats
    /// apart; returns `false` for any other value.
    func writeScalar<Value: Encodable>(_ value: Value) throws -> Bool {
        // Metatypes compared, then the value taken as what it is: no dynamic cast for each case.
        func take<Scalar>(_: Scalar.Type) -> Scalar {
            unsafeBitCast(value, to: Scalar.self)
        }
        switch ObjectIdentifier(Value.self) {
        case ObjectIdentifier(String.self): writeString(take(String.self))
        case ObjectIdentifier(Int.self): writeInteger(take(Int.self))
        case ObjectIdentifier(Bool.self): bytes.append(contentsOf: (take(Bool.self) ? "true" : "false").utf8)
        case ObjectIdentifier(Double.self): try writeFloatingPoint(take(Double.self))
        case ObjectIdentifier(Int64.self): writeInteger(take(Int64.self))
        case ObjectIdentifier(UInt64.self): writeInteger(take(UInt64.self))
        case ObjectIdentifier(Int32.self): writeInteger(take(Int32.self))
        case ObjectIdentifier(UInt32.self): writeInteger(take(UInt32.self))
        case ObjectIdentifier(UInt.self): writeInteger(take(UInt.self))
        case ObjectIdentifier(Int16.self): writeInteger(take(Int16.self))
        case ObjectIdentifier(UInt16.self): writeInteger(take(UInt16.self))
        case ObjectIdentifier(Int8.self): writeInteger(take(Int8.self))
        case ObjectIdentifier(UInt8.self): writeInteger(take(UInt8.self))
        case ObjectIdentifier(Float.self): try writeFloatingPoint(take(Float.self))
        case ObjectIdentifier(Date.self), ObjectIdentifier(Data.self), ObjectIdentifier(URL.self),
            ObjectIdentifier(Decimal.self):
            bytes.append(contentsOf: try PayloadEncoder.fallback.encode(value))
        default:
            return false
        }
        return true
    }

    func writeInteger(_ value: some BinaryInteger) {
        guard let number = Int64(exactly: value) else {
            bytes.append(contentsOf: value.description.utf8)
            return
        }
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        JSONBytes.appendDecimal(number.magnitude, to: &bytes)
    }

    func writeFloatingPoint<Number: BinaryFloatingPoint & LosslessStringConvertible>(_ value: Number) throws {
        // JSONEncoder's default refuses them; so does the fallback, with its own error.
        guard value.isFinite else { throw Unwritable() }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes `string` quoted, escaped as `JSONEncoder` escapes it (slashes left as they are).
    func writeString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        let plain = string.withUTF8 { text in
            guard text.allSatisfy({ JSONBytes.isPlain($0) }) else {
                return false
            }
            bytes.append(contentsOf: text)
            return true
        }
        if plain {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                bytes.append(digits[Int(byte / 16)])
                bytes.append(digits[Int(byte % 16)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// What makes the writer give the value to `JSONEncoder`, which then says what is wrong with it.
    struct Unwritable: Error {}
}
