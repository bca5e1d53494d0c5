import InventoryCore
import Testing

@Suite("Reading input lines as bytes")
struct LineReaderTests {
    /// Reads `input` through a reader that gets at most `chunk` bytes per read.
    func lines(_ input: [UInt8], chunk: Int = 3, maximumLength: Int = 8) -> [LineReader.Line] {
        var offset = 0
        var reader = LineReader(maximumLength: maximumLength) { buffer in
            let count = min(chunk, buffer.count, input.count - offset)
            for index in 0..<count { buffer[index] = input[offset + index] }
            offset += count
            return count
        }
        var lines: [LineReader.Line] = []
        while let line = reader.next() { lines.append(line) }
        return lines
    }

    @Test("lines end at \\n or \\r\\n, blank lines count, the last line needs no line break", arguments: [1, 3, 100])
    func lineBreaks(chunk: Int) {
        #expect(
            lines(Array("one\r\n\ntwo\nthree".utf8), chunk: chunk)
                == [.text("one"), .text(""), .text("two"), .text("three")]
        )
        #expect(lines(Array("one\n".utf8), chunk: chunk) == [.text("one")])
        #expect(lines([], chunk: chunk) == [])
    }

    @Test("a line that is not UTF-8 is reported as such, and the next line is read", arguments: [1, 3, 100])
    func invalidUTF8(chunk: Int) {
        let input: [UInt8] = Array("ok\n".utf8) + [0x61, 0xFF, 0x62, 10] + [0xC3] + Array("\né\n".utf8)
        #expect(lines(input, chunk: chunk) == [.text("ok"), .invalidUTF8, .invalidUTF8, .text("é")])
    }

    @Test("a line longer than the limit is skipped whole and reported with its length", arguments: [1, 3, 100])
    func tooLong(chunk: Int) {
        let input = Array("12345678\n123456789\nshort\n\(String(repeating: "x", count: 50))".utf8)
        #expect(
            lines(input, chunk: chunk)
                == [.text("12345678"), .tooLong(bytes: 9), .text("short"), .tooLong(bytes: 50)]
        )
    }
}
