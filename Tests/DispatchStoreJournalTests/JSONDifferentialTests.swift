import Foundation
import TestSupport
import Testing

@testable import DispatchStore
@testable import DispatchStoreJournal

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The hand-written JSON reader (JSONDocument, JSONNodeDecoder, and the JSONDecoder it falls back
// on) against Foundation's JSONDecoder, on seeded generated lines and mutations of them: for every
// line that is strict JSON, both give the same payload or both refuse it. Lines are log records as
// the reader meets them: an object whose "payload" key holds the value. 100,000 cases a run.

/// Any JSON value, decoded through the containers' public API as a type of a program would be:
/// trying each kind in turn, as `try?` chains do.
private indirect enum AnyJSON: Decodable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case unsigned(UInt64)
    case double(UInt64)  // the bit pattern: -0.0 and 0.0 differ, as they do for a program
    case string(String)
    case array([AnyJSON])
    case object([String: AnyJSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .int(value)
        } else if let value = try? container.decode(UInt64.self) {
            self = .unsigned(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value.bitPattern)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([AnyJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: AnyJSON].self))
        }
    }
}

/// A payload of the shapes `JSONEncoder` writes for actions: an enum with associated values,
/// optionals, nested containers, every width of number.
private enum Typed: Codable, Equatable {
    case plain
    case labelled(name: String, count: Int, note: String?)
    case unlabelled(Double, [Int8])
    case nested(Inner)
    case numbers(UInt8, Int16, UInt32, Int64, UInt64, Float)
    case map([String: [Bool]])

    struct Inner: Codable, Equatable {
        var flag: Bool
        var values: [Double]?
        var children: [Inner]
    }
}

/// Decodes a line's payload as the log reader does.
private func handWritten<Value: Decodable>(_ type: Value.Type, _ line: [UInt8]) -> Value? {
    guard let document = try? JSONDocument(bytes: line), document.nodes[0].kind == .object,
        document.hasStringKeys(0), let payload = document.member("payload", in: 0)
    else { return nil }
    return try? RecordStream.decodePayload(Value.self, document, at: payload, of: line)
}

/// Decodes a line's payload with Foundation's `JSONDecoder`.
private func foundation<Value: Decodable>(_ type: Value.Type, _ line: [UInt8]) -> Value? {
    try? JSONDecoder().decode(RecordStream.Payload<Value>.self, from: Data(line)).payload
}

/// Whether both decoders give `line` the same payload (or both refuse), whether it is strict JSON,
/// whether JSONDecoder decoded it, and what each gave, for messages.
///
/// A line that is not strict JSON (RFC 8259) is refused by the reader as a whole; JSONDecoder reads
/// lazily and may still find a payload in it (a malformed number, a raw control character or a bad
/// escape elsewhere in the line does not stop it): such lines are counted, not compared.
private func compare<Value: Decodable & Equatable>(
    _ type: Value.Type,
    _ line: [UInt8]
) -> (agree: Bool, strict: Bool, decoded: Bool, mine: String, theirs: String) {
    let strict = (try? JSONDocument(bytes: line)) != nil
    let mine = handWritten(type, line)
    let theirs = foundation(type, line)
    return (
        !strict || mine == theirs, strict, theirs != nil, mine.map { "\($0)" } ?? "refused",
        theirs.map { "\($0)" } ?? "refused"
    )
}

/// Writes random JSON texts and their mutations.
private struct LineMaker {
    var random: SeededGenerator

    private mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &random) < percent
    }

    private mutating func pick<Element>(_ elements: [Element]) -> Element {
        elements[Int.random(in: 0..<elements.count, using: &random)]
    }

    /// White space: JSON's four kinds, now and then none, rarely a kind JSON does not allow.
    mutating func space() -> [UInt8] {
        guard chance(30) else { return [] }
        if chance(3) { return pick([[0x0B], [0x0C], [0xC2, 0xA0], [0xEF, 0xBB, 0xBF]]) }
        return (0..<Int.random(in: 1...3, using: &random)).map { _ in pick([0x20, 0x09, 0x0A, 0x0D]) }
    }

    mutating func number() -> [UInt8] {
        let text: String
        switch Int.random(in: 0..<12, using: &random) {
        case 0: text = String(Int.random(in: -1_000...1_000, using: &random))
        case 1: text = String(Int64.random(in: .min ... .max, using: &random))
        case 2:
            text = pick([
                "9223372036854775807", "9223372036854775808", "-9223372036854775808",
                "-9223372036854775809", "18446744073709551615", "18446744073709551616",
                "123456789012345678901234567890", "-0", "0",
            ])
        case 3: text = String(Double.random(in: -1e6...1e6, using: &random))
        case 4:
            text =
                "\(Int.random(in: -99...99, using: &random)).\(Int.random(in: 0...999, using: &random))"
                + "\(pick(["e", "E"]))\(pick(["", "+", "-"]))\(Int.random(in: 0...30, using: &random))"
        case 5: text = pick(["1e2", "1E2", "100.0", "2.55e2", "1.5", "-0.0", "0.0", "1e20", "1e-2", "100e-2"])
        case 6:
            text = pick([
                "1e400", "-1e400", "1e-400", "5e-324", "2e-324", "2.2250738585072014e-308",
                "1.7976931348623157e308", "3.4028235e38", "3.5e38", "1.4e-45", "1e-46",
            ])
        case 7: text = pick(["01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "Infinity", "NaN", "--1", "1.2.3"])
        case 8: text = "9007199254740993.0"
        default: text = String(UInt8.random(in: 0...255, using: &random))
        }
        return Array(text.utf8)
    }

    mutating func string() -> [UInt8] {
        var bytes: [UInt8] = [0x22]
        for _ in 0..<Int.random(in: 0...6, using: &random) {
            switch Int.random(in: 0..<14, using: &random) {
            case 0: bytes += Array(pick(["a", "payload", "milk", " ", "key", "é", "😀", "e\u{301}"]).utf8)
            case 1: bytes += Array(pick(["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"]).utf8)
            case 2: bytes += Array(String(format: "\\u%04x", UInt16.random(in: 0...0xD7FF, using: &random)).utf8)
            case 3: bytes += Array(String(format: "\\u%04X", UInt16.random(in: 0xE000...0xFFFF, using: &random)).utf8)
            case 4: bytes += Array("\\uD83D\\uDE00".utf8)  // a surrogate pair
            case 5: bytes += Array(pick(["\\uDE00\\uD83D", "\\uD83D", "\\uDE00", "\\uD83Dx", "\\uD83D\\u0041"]).utf8)
            case 6:
                bytes += pick([
                    [0xFF], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF5, 0x80, 0x80, 0x80], [0x80], [0xE2, 0x82],
                ])
            case 7: bytes += pick([[0x7F], [0x1F], [0x00], [0x09]])
            case 8: bytes += Array(pick(["\\x41", "\\U0041", "\\u00", "\\u12G4", "\\'", "\\"]).utf8)
            case 9: bytes += Array("\\u0000".utf8)
            default: bytes += Array(String(UnicodeScalar(UInt8.random(in: 0x20...0x7E, using: &random))).utf8)
            }
        }
        return bytes + [0x22]
    }

    mutating func value(depth: Int) -> [UInt8] {
        switch Int.random(in: 0..<(depth < 4 ? 10 : 7), using: &random) {
        case 0: return Array(pick(["null", "true", "false", "nul", "True", "tru"]).utf8)
        case 1, 2: return number()
        case 3, 4, 5, 6: return string()
        case 7: return container(object: false, depth: depth)
        default: return container(object: true, depth: depth)
        }
    }

    mutating func container(object: Bool, depth: Int) -> [UInt8] {
        var bytes: [UInt8] = [object ? 0x7B : 0x5B]
        let count = Int.random(in: 0...4, using: &random)
        for index in 0..<count {
            bytes += space()
            if object {
                // A few keys, so that objects repeat them; some spelled with escapes.
                bytes += Array(pick(["\"a\"", "\"b\"", "\"a\"", "\"\\u0061\"", "\"é\"", "\"e\u{301}\"", "\"\""]).utf8)
                bytes += space() + [0x3A] + space()
            }
            bytes += value(depth: depth + 1)
            bytes += space()
            if index < count - 1 || chance(5) { bytes += [0x2C] }  // now and then a trailing comma
        }
        return bytes + space() + [object ? 0x7D : 0x5D]
    }

    /// A line whose payload is `payload`, among other members, maybe given twice.
    mutating func line(payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = chance(3) ? [0xEF, 0xBB, 0xBF] : []
        bytes += space() + Array(#"{"id":1,"#.utf8) + space()
        bytes += Array(#""payload""#.utf8) + space() + [0x3A] + space() + payload + space()
        if chance(10) { bytes += Array(#","payload":"#.utf8) + value(depth: 3) }
        if chance(20) { bytes += Array(#","stores":["a","b"]"#.utf8) + space() }
        if chance(3) { bytes += [0x2C] }
        return bytes + [0x7D] + space()
    }

    /// `line`, changed a little: a byte flipped or replaced, cut short, or bytes inserted.
    mutating func mutate(_ line: [UInt8]) -> [UInt8] {
        var bytes = line
        guard !bytes.isEmpty else { return bytes }
        for _ in 0..<Int.random(in: 1...2, using: &random) {
            let position = Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0: bytes[position] ^= UInt8(1) << UInt8.random(in: 0...7, using: &random)
            case 1: bytes.removeSubrange(position...)
            case 2:
                bytes.insert(
                    contentsOf: pick([
                        [0x2C], [0x5D], [0x7D], [0x22], [0x5C], [0x30], [0x65], [0x2D], [0x20], [0x00], [0xFF],
                        [0xEF, 0xBB, 0xBF], [0x7B], [0x5B],
                    ]),
                    at: position
                )
            default: bytes[position] = UInt8.random(in: 0...255, using: &random)
            }
            if bytes.isEmpty { break }
        }
        return bytes
    }

    /// A random payload of the `Typed` shapes, as `JSONEncoder` writes it.
    mutating func typed() -> Typed {
        func inner(_ maker: inout LineMaker, _ depth: Int) -> Typed.Inner {
            Typed.Inner(
                flag: maker.chance(50),
                values: maker.chance(50) ? nil : [Double.random(in: -1e9...1e9, using: &maker.random), 0.1, -0.0],
                children: depth > 2
                    ? [] : (0..<Int.random(in: 0...2, using: &maker.random)).map { _ in inner(&maker, depth + 1) }
            )
        }
        switch Int.random(in: 0..<6, using: &random) {
        case 0: return .plain
        case 1:
            return .labelled(
                name: pick(["milk", "é\u{301}\"\\\n", "😀", ""]),
                count: Int.random(in: .min ... .max, using: &random),
                note: chance(50) ? nil : "n"
            )
        case 2:
            return .unlabelled(
                Double.random(in: -1...1, using: &random) * pow(10, Double(Int.random(in: -300...300, using: &random))),
                [Int8.min, Int8.max, 0]
            )
        case 3: return .nested(inner(&self, 0))
        case 4:
            return .numbers(
                .random(in: 0...255, using: &random),
                .random(in: .min ... .max, using: &random),
                .random(in: 0 ... .max, using: &random),
                .random(in: .min ... .max, using: &random),
                .random(in: 0 ... .max, using: &random),
                Float.random(in: -1e30...1e30, using: &random)
            )
        default: return .map(["a": [true], "é": [], "": [false, true]])
        }
    }
}

/// Cases per seed; eight seeds make the run: 100,000 cases, a tenth under ThreadSanitizer, which
/// slows this single-threaded work several times over and has no threads here to check.
private let casesPerSeed = dlsym(dlopen(nil, RTLD_LAZY), "__tsan_init") == nil ? 12_500 : 1_250

@Suite("The JSON reader against JSONDecoder")
struct JSONDifferentialTests {
    @Test("generated lines and mutations of them: the same payload, or both refuse", arguments: 1...8)
    func sameAsJSONDecoder(seed: UInt64) throws {
        var maker = LineMaker(random: SeededGenerator(seed: seed))
        var disagreements: [String] = []
        var decided = 0
        for index in 0..<casesPerSeed {
            let line: [UInt8]
            let outcome: (agree: Bool, strict: Bool, decoded: Bool, mine: String, theirs: String)
            if index % 3 == 2 {
                let encoded = try JSONEncoder().encode(maker.typed())
                var made = maker.line(payload: Array(encoded))
                if index % 2 == 0 { made = maker.mutate(made) }
                line = made
                outcome = compare(Typed.self, line)
            } else {
                var made = maker.line(payload: maker.value(depth: 0))
                if index % 3 == 1 { made = maker.mutate(made) }
                line = made
                outcome = compare(AnyJSON.self, line)
            }
            if outcome.decoded && outcome.strict { decided += 1 }
            if !outcome.agree && disagreements.count < 10 {
                let text = String(decoding: line, as: UTF8.self).debugDescription
                let hex = line.map { String($0, radix: 16) }.joined(separator: " ")
                disagreements.append("\(text) (\(hex)): reader \(outcome.mine), JSONDecoder \(outcome.theirs)")
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        // Not only refusals: a good share of the lines are strict JSON whose payload decodes.
        #expect(decided > casesPerSeed / 4, "\(decided) of \(casesPerSeed) decoded")
    }
}
