import Foundation
import Testing

@testable import DispatchStore
@testable import DispatchStoreJournal

/// Every shape of value `JSONEncoder` writes, for checking the fast decoder against it.
private struct Everything: Codable, Equatable {
    enum Kind: Codable, Equatable {
        case plain
        case labelled(name: String, count: Int)
        case unlabelled(Double, [Int])
    }

    struct Inner: Codable, Equatable {
        var flag: Bool
        var note: String?
    }

    var text = "a \"quoted\" \\ line\nwith\ttabs, é, 😀 and \u{1}"
    var empty = ""
    var integers: [Int64] = [0, -1, .max, .min]
    var unsigned: [UInt64] = [0, .max]
    var small: [Int8] = [-128, 127]
    var halves: [UInt16] = [0, 65_535]
    var ints = [Int32.min, 7]
    var words = [UInt.max, 1]
    var bytes: [UInt8] = [255]
    var shorts: [Int16] = [-3]
    var longs: [UInt32] = [4_000_000_000]
    var double = 3.141_592_653_589_793
    var negative = -2.5e-300
    var float: Float = 0.1
    var flags = [true, false]
    var missing: String? = nil
    var present: Int? = 5
    var nested = [Inner(flag: true, note: nil), Inner(flag: false, note: "x")]
    var kinds: [Kind] = [.plain, .labelled(name: "n", count: 2), .unlabelled(1.5, [1, 2])]
    var byName = ["b": 2, "a": 1]
    var byNumber = [3: "three", -1: "minus one"]
    var set: Set<String> = ["x", "y", "z"]
    var date = Date(timeIntervalSince1970: 1_800_000_000.25)
    var data = Data([0, 1, 2, 250])
    var url = URL(string: "https://example.com/a?b=c")!
    var decimal = Decimal(string: "12.345")!
    var matrix: [[Int]] = [[], [1], [2, 3]]
}

/// Values that use their encoder in ways the payload writer cannot follow in one pass.
private struct Interleaved: Encodable {
    enum Keys: String, CodingKey { case inner, after }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var inner = container.nestedUnkeyedContainer(forKey: .inner)
        try container.encode(1, forKey: .after)
        try inner.encode(2)  // after its parent moved on
    }
}

private struct TwiceKeyed: Encodable {
    enum Keys: String, CodingKey { case key }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(1, forKey: .key)
        try container.encode(2, forKey: .key)
    }
}

private class Base: Encodable {
    var base = 1
}

private final class Derived: Base {
    var derived = "d"
    enum Keys: String, CodingKey { case derived }
    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try super.encode(to: container.superEncoder())
        try container.encode(derived, forKey: .derived)
    }
}

private struct Nothing: Encodable {
    func encode(to encoder: any Encoder) throws {}
}

@Suite("Log records: the JSON reader, the fast decoder and state digests")
struct RecordFormatTests {
    @Test("the fast decoder reads back everything JSONEncoder writes")
    func decoderMatchesEncoder() throws {
        let value = Everything()
        let data = try JSONEncoder().encode(value)
        let document = try JSONDocument(bytes: Array(data))
        let decoded = try JSONNodeDecoder.decode(Everything.self, from: document, at: 0)
        #expect(decoded == value)
        #expect(decoded == (try JSONDecoder().decode(Everything.self, from: data)))
    }

    @Test("the fast decoder refuses what it is not sure of, with a type mismatch")
    func decoderRefuses() throws {
        for (text, type) in [("5.0", "Int"), ("1e400", "Double"), ("-1", "UInt"), ("300", "UInt8"), ("\"x\"", "Int")] {
            let document = try JSONDocument(bytes: Array(text.utf8))
            #expect(throws: DecodingError.self, "\(text) as \(type)") {
                switch type {
                case "Int": _ = try JSONNodeDecoder.decode(Int.self, from: document, at: 0)
                case "UInt": _ = try JSONNodeDecoder.decode(UInt.self, from: document, at: 0)
                case "UInt8": _ = try JSONNodeDecoder.decode(UInt8.self, from: document, at: 0)
                default: _ = try JSONNodeDecoder.decode(Double.self, from: document, at: 0)
                }
            }
        }
    }

    @Test("the parser names the byte where a text stops being JSON")
    func syntaxErrors() {
        for (text, offset) in [
            ("{\"a\":1,,}", 7), ("[1 2]", 3), ("{\"a\" 1}", 5), ("\"abc", 4), ("01", 1), ("{} x", 3),
        ] {
            #expect(
                performing: { try JSONDocument(bytes: Array(text.utf8)) },
                throws: { error in
                    (error as? JSONDocument.SyntaxError)?.offset == offset
                }
            )
        }
        // As JSONDecoder does, one comma may end a container's members.
        #expect(throws: Never.self) { try JSONDocument(bytes: Array("{\"a\":[1,],}".utf8)) }
        var deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: JSONDocument.SyntaxError.self) { try JSONDocument(bytes: Array(deep.utf8)) }
        deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: Never.self) { try JSONDocument(bytes: Array(deep.utf8)) }
    }

    @Test("record times are parsed exactly, the fast way and Foundation's")
    func times() throws {
        let date = try #require(ActionRecord.parseTime(ArraySlice("2026-11-21T10:15:30.125Z".utf8)))
        #expect(abs(date.timeIntervalSince1970 - 1_795_256_130.125) < 0.000_5)
        let other = try #require(ActionRecord.parseTime(ArraySlice("2026-11-21T10:15:30.125+00:00".utf8)))
        #expect(abs(other.timeIntervalSince(date)) < 0.000_5)
        let now = Date()
        let parsed = try #require(ActionRecord.parseTime(ArraySlice(ActionRecord.format(now).utf8)))
        #expect(abs(parsed.timeIntervalSince(now)) < 0.001)
        #expect(ActionRecord.parseTime(ArraySlice("2026-13-21T10:15:30.125Z".utf8)) == nil)
    }

    @Test("record times are written as Foundation's ISO 8601 style writes them, from 1970 to 9999 and outside")
    func timesWritten() {
        var generator = SystemRandomNumberGenerator()
        var intervals: [Double] = [0, 0.000_4, 0.999_9, 1.999_6, 951_782_400, 1_795_256_130.125, 253_402_300_799.999]
        intervals += [-0.5, -1.000_4, 253_402_300_800, -62_135_596_800]
        intervals += (0..<20_000).map { _ in Double.random(in: 0..<253_402_300_800, using: &generator) }
        intervals += (0..<2_000).map { _ in Double(Int.random(in: 0..<4_102_444_800_000, using: &generator)) / 1_000 }
        let mismatches = intervals.filter { interval in
            let date = Date(timeIntervalSince1970: interval)
            var line: [UInt8] = []
            ActionRecord.appendTime(date, to: &line)
            return line != Array(ActionRecord.format(date).utf8)
        }
        #expect(mismatches.isEmpty, "written differently: \(mismatches.prefix(5))")
    }

    @Test("a record line has every key in its place, strings escaped, whatever the optional keys")
    func recordLines() {
        let time = Date(timeIntervalSince1970: 1_795_256_130.125)
        var record = ActionRecord(
            id: 42,
            time: time,
            mode: .serial,
            target: nil,
            stores: ["stock", "orders"],
            sequenceNumbers: [],
            unfinished: [],
            checks: [],
            type: "Inventory.InventoryAction"
        )
        let payload = Data(#"{"restock":{"item":"apple"}}"#.utf8)
        #expect(
            String(decoding: record.encodedLine(payload: payload), as: UTF8.self)
                == #"{"id":42,"time":"2026-11-21T10:15:30.125Z","mode":"serial","stores":["stock","orders"],"#
                + #""type":"Inventory.InventoryAction","payload":{"restock":{"item":"apple"}}}"# + "\n"
        )
        record.id = 0
        record.target = "a \"quoted\"\\ name\n\u{1}"
        record.stores = []
        record.sequenceNumbers = [0, 10, UInt64.max]
        record.unfinished = ["b"]
        record.checks = [ActionRecord.Check(storeIdentifier: "c", sequenceNumber: 3, digest: 255)]
        #expect(
            String(decoding: record.encodedLine(payload: Data("1".utf8)), as: UTF8.self)
                == #"{"id":0,"time":"2026-11-21T10:15:30.125Z","mode":"serial","#
                + #""target":"a \"quoted\"\\ name\n\u0001","stores":[],"seq":[0,10,18446744073709551615],"#
                + #""unfinished":["b"],"checks":[["c",3,"00000000000000ff"]],"type":"Inventory.InventoryAction","#
                + #""payload":1}"# + "\n"
        )
    }

    @Test("payloads are what JSONEncoder writes: the same values, strings and numbers byte for byte")
    func payloadsMatchJSONEncoder() throws {
        let value = Everything()
        let data = try PayloadEncoder.encode(value)
        #expect(try JSONDecoder().decode(Everything.self, from: data) == value)
        #expect(try JSONNodeDecoder.decode(Everything.self, from: JSONDocument(bytes: Array(data)), at: 0) == value)
        let reference = JSONEncoder()
        reference.outputFormatting = [.withoutEscapingSlashes]
        let strings = (0..<128).map { String(UnicodeScalar(UInt8($0))) } + ["a/b", "é😀", "\u{7f}", ""]
        #expect(try PayloadEncoder.encode(strings) == reference.encode(strings))
        var generator = SystemRandomNumberGenerator()
        let doubles: [Double] =
            [0, -0.0, 1, 2, 0.1, 1e20, 1e-7, 123_456_789_012_345_680, .greatestFiniteMagnitude, .leastNonzeroMagnitude]
            + (0..<2_000).map { _ in Double(bitPattern: generator.next()) }.filter(\.isFinite)
        #expect(try PayloadEncoder.encode(doubles) == reference.encode(doubles))
        let randomFloats = (0..<500).map { _ in Float(bitPattern: UInt32.random(in: 0...UInt32.max)) }
        let floats: [Float] = [0.1, 3, 1e30] + randomFloats.filter(\.isFinite)
        #expect(try PayloadEncoder.encode(floats) == reference.encode(floats))
        let integers: [[Int64]] = [[.min, -1, 0, 7, .max]]
        #expect(try PayloadEncoder.encode(integers) == reference.encode(integers))
        #expect(try PayloadEncoder.encode(["k": [1, 2]]) == Data(#"{"k":[1,2]}"#.utf8))
        #expect(try PayloadEncoder.encode(Optional<Int>.none) == Data("null".utf8))
    }

    @Test("a value the payload writer cannot follow is written by JSONEncoder, and its errors are JSONEncoder's")
    func payloadFallback() throws {
        let interleaved = try JSONSerialization.jsonObject(with: PayloadEncoder.encode(Interleaved())) as? NSDictionary
        #expect(interleaved == ["inner": [2], "after": 1])
        let twice = try JSONSerialization.jsonObject(with: PayloadEncoder.encode(TwiceKeyed())) as? NSDictionary
        #expect(twice == ["key": 2])
        let derived = try JSONSerialization.jsonObject(with: PayloadEncoder.encode(Derived())) as? NSDictionary
        #expect(derived == ["super": ["base": 1], "derived": "d"])
        #expect(throws: EncodingError.self) { try PayloadEncoder.encode(Nothing()) }
        #expect(throws: EncodingError.self) { try PayloadEncoder.encode([Double.nan]) }
        #expect(throws: EncodingError.self) { try PayloadEncoder.encode(["x": Float.infinity]) }
    }

    @Test("a digest ignores the order of sets, dictionaries and keyed members, but not of arrays")
    func digestOrder() throws {
        var first = Everything()
        var second = Everything()
        first.set = []
        second.set = []
        for index in 0..<200 {
            first.set.insert("item \(index)")
            second.set.insert("item \(199 - index)")
        }
        first.byName = Dictionary(uniqueKeysWithValues: (0..<100).map { ("k\($0)", $0) })
        second.byName = Dictionary(uniqueKeysWithValues: (0..<100).reversed().map { ("k\($0)", $0) })
        #expect(StateDigest.digest(of: first) == StateDigest.digest(of: second))
        second.matrix = [[1], [], [2, 3]]
        #expect(StateDigest.digest(of: first) != StateDigest.digest(of: second))
        second = first
        second.set.insert("one more")
        #expect(StateDigest.digest(of: first) != StateDigest.digest(of: second))
        second = first
        second.present = nil
        #expect(StateDigest.digest(of: first) != StateDigest.digest(of: second))
    }

    @Test("digests are the same in every process: a fixed value has a fixed digest")
    func digestIsStable() throws {
        struct Fixed: Codable {
            var name = "apple"
            var counts = ["b": 2, "a": 1]
            var tags: Set<Int> = [3, 1, 2]
            var list = [1.5, 2, -3]
            var flag = true
            var none: Int? = nil
        }
        #expect(StateDigest.digest(of: Fixed()).map(ActionRecord.hex) == "60ae9e49a134295f")
    }

    @Test("every scalar an encoder takes has a fixed digest, as a keyed member, an array element and a single value")
    func scalarDigestsAreStable() throws {
        struct Single<Value: Encodable>: Encodable {
            var value: Value
            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                try container.encode(value)
            }
        }
        struct Scalars: Encodable {
            var none: Int? = nil
            var flag = false
            var text = "pear"
            var double = 2.5
            var float: Float = 0.25
            var int = -7
            var int8: Int8 = -8
            var int16: Int16 = -16
            var int32: Int32 = -32
            var int64: Int64 = -64
            var uint: UInt = 7
            var uint8: UInt8 = 8
            var uint16: UInt16 = 16
            var uint32: UInt32 = 32
            var uint64: UInt64 = 64
            var list: [Int8?] = [nil, 1, -1]
            var floats: [Float] = [0.5, 3]
            var flags = [true, false]
            var singles = [Single(value: UInt16(9)), Single(value: 10)]
            var singleNone = Single(value: Int?.none)

            func encode(to encoder: any Encoder) throws {
                var keyed = encoder.container(keyedBy: Key.self)
                try keyed.encodeNil(forKey: .none)
                try keyed.encode(flag, forKey: .flag)
                try keyed.encode(text, forKey: .text)
                try keyed.encode(double, forKey: .double)
                try keyed.encode(float, forKey: .float)
                try keyed.encode(int, forKey: .int)
                try keyed.encode(int8, forKey: .int8)
                try keyed.encode(int16, forKey: .int16)
                try keyed.encode(int32, forKey: .int32)
                try keyed.encode(int64, forKey: .int64)
                try keyed.encode(uint, forKey: .uint)
                try keyed.encode(uint8, forKey: .uint8)
                try keyed.encode(uint16, forKey: .uint16)
                try keyed.encode(uint32, forKey: .uint32)
                try keyed.encode(uint64, forKey: .uint64)
                var unkeyed = keyed.nestedUnkeyedContainer(forKey: .list)
                try unkeyed.encodeNil()
                try unkeyed.encode(flag)
                try unkeyed.encode(text)
                try unkeyed.encode(double)
                try unkeyed.encode(float)
                try unkeyed.encode(int)
                try unkeyed.encode(int8)
                try unkeyed.encode(int16)
                try unkeyed.encode(int32)
                try unkeyed.encode(int64)
                try unkeyed.encode(uint)
                try unkeyed.encode(uint8)
                try unkeyed.encode(uint16)
                try unkeyed.encode(uint32)
                try unkeyed.encode(uint64)
                try unkeyed.encode(list)
                try keyed.encode(floats, forKey: .floats)
                try keyed.encode(flags, forKey: .flags)
                try keyed.encode(singles, forKey: .singles)
                try keyed.encode(singleNone, forKey: .singleNone)
            }

            enum Key: CodingKey {
                case none, flag, text, double, float, int, int8, int16, int32, int64
                case uint, uint8, uint16, uint32, uint64, list, floats, flags, singles, singleNone
            }
        }
        #expect(StateDigest.digest(of: Scalars()).map(ActionRecord.hex) == "85bbec2d977e12c9")
    }
}
