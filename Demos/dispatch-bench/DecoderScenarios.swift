import DispatchStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// L1J and L2J: L1 and L2 with Foundation's JSONDecoder in the place of the library's reader (one
// decoder for the whole log, each line decoded in one pass: the record and its action together), to
// rerun the comparison behind the hand-written reader (JSONDocument and JSONNodeDecoder): it is
// kept for as long as JSONDecoder misses L1's and L2's goals.

/// One line of an action log as `JSONDecoder` reads it: the record and its action at once.
struct DecodedLine<Action: Decodable>: Decodable {
    /// A state checksum: `["eu", 1000, "9f3a2b1c0d4e5f60"]`.
    struct Check: Decodable {
        let store: String
        let sequenceNumber: UInt64
        let digest: String

        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            store = try container.decode(String.self)
            sequenceNumber = try container.decode(UInt64.self)
            digest = try container.decode(String.self)
        }
    }

    let id: UInt64?
    let time: Date
    let mode: String?
    let target: String?
    let stores: [String]?
    let seq: [UInt64]?
    let unfinished: [String]?
    let checks: [Check]?
    let type: String?
    let payload: Action?
    let checkpoint: Bool?
}

/// A decoder for log lines: times as the log writes them (`2026-11-21T10:15:30.125Z`).
func logLineDecoder() -> JSONDecoder {
    let decoder = JSONDecoder()
    let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    decoder.dateDecodingStrategy = .custom { decoder in
        try style.parse(decoder.singleValueContainer().decode(String.self))
    }
    return decoder
}

/// Calls `body` with each line of the file at `path`, read through a buffer of 1 MiB.
func forEachLine(in path: String, _ body: (Data) throws -> Void) throws {
    guard let handle = FileHandle(forReadingAtPath: path) else {
        throw BenchmarkFailure(message: "cannot read \(path)")
    }
    defer { try? handle.close() }
    var pending = Data()
    while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
        pending.append(chunk)
        var start = pending.startIndex
        while let newline = pending[start...].firstIndex(of: 0x0A) {
            try body(pending[start..<newline])
            start = newline + 1
        }
        pending = Data(pending[start...])
    }
}

func decoderScenarios(scale: Double) -> [Scenario] {
    let logBytes = scaled(50_000_000, scale)
    let limit = Scenario.Limit(seconds: 1 * scale, megabytes: 50)
    return [
        decoderScenario(
            id: "L1J",
            summary: "L1 with JSONDecoder: read the 50 MB log, each line decoded in one pass (L1's goals)",
            bytes: logBytes,
            limit: limit
        ) { log, decoder in
            var count = 0
            try forEachLine(in: log.path) { line in
                if try decoder.decode(DecodedLine<LedgerEntry>.self, from: line).payload != nil { count += 1 }
            }
            return { expect(count, log.lines, "entries read") }
        },
        decoderScenario(
            id: "L2J",
            summary: "L2 with JSONDecoder: replay the 50 MB log into 4 stores, in file order (L2's goals)",
            bytes: logBytes,
            limit: limit
        ) { log, decoder in
            let (dispatcher, stores) = ledgerDispatcher()
            try forEachLine(in: log.path) { line in
                let decoded = try decoder.decode(DecodedLine<LedgerEntry>.self, from: line)
                // The log was written by .sync dispatches, one at a time: file order is each store's order.
                guard let entry = decoded.payload else { return }
                dispatcher.dispatch(entry, to: decoded.target, mode: .sync)
            }
            let states = stores.map(\.state)
            return { states == log.states ? nil : "replayed states differ from the live ones" }
        },
    ]
}

/// L1J and L2J: `body` reads a log of `bytes` bytes with a decoder of its own and returns the check
/// of what it did.
private func decoderScenario(
    id: String,
    summary: String,
    bytes: Int,
    limit: Scenario.Limit,
    body: @escaping (PreparedLog, JSONDecoder) throws -> () -> String?
) -> Scenario {
    logScenario(id: id, summary: summary, bytes: bytes, limit: limit) { log in
        do {
            return try body(log, logLineDecoder())
        } catch {
            return { "reading failed: \(error)" }
        }
    }
}
