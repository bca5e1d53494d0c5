import Foundation
import Testing

@testable import DispatchStore

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
        for (text, offset) in [("{\"a\":1,}", 7), ("[1 2]", 3), ("{\"a\" 1}", 5), ("\"abc", 4), ("01", 1), ("{} x", 3)]
        {
            #expect(
                performing: { try JSONDocument(bytes: Array(text.utf8)) },
                throws: { error in
                    (error as? JSONDocument.SyntaxError)?.offset == offset
                }
            )
        }
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
}
