import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

@Suite("ActionLog records one at a time: record(of:) and RecordDecoder")
struct ActionLogRecordsTests {
    @Test("a record made for an action decodes back to the same action, stores, mode and id")
    func roundTrip() throws {
        let time = Date(timeIntervalSince1970: 1_790_000_000.125)
        let record = try ActionLog.record(
            of: ChainAction.mix(42),
            id: 7,
            storeIdentifiers: ["a", "b"],
            time: time,
            destination: "stream CHAINS"
        )
        #expect(!record.contains(UInt8(ascii: "\n")))
        let text = String(decoding: record, as: UTF8.self)
        #expect(text.hasPrefix("{\"id\":7,\"time\":\"2026-09-21T"))
        #expect(text.contains("\"mode\":\"sync\",\"stores\":[\"a\",\"b\"],"))
        #expect(text.contains("\"type\":\"DispatchStoreJournalTests.ChainAction\""))
        var decoder = try ActionLog.RecordDecoder(actionTypes: [ChainAction.self], source: "stream CHAINS")
        let entry = try decoder.entry(from: record, number: 17)
        #expect(entry.action as? ChainAction == .mix(42))
        #expect(entry.id == 7 && entry.line == 17 && entry.mode == .sync)
        #expect(entry.storeIdentifiers == ["a", "b"] && entry.sequenceNumbers.isEmpty)
        #expect(entry.time == time)
        // The decoder is reused: a second record of the same type.
        let second = try ActionLog.record(of: ChainAction.mix(43), storeIdentifiers: ["a"], destination: "x")
        #expect(try decoder.entry(from: second, number: 18).action as? ChainAction == .mix(43))
    }

    @Test("a line the action log wrote is a record the decoder reads, its final newline and all")
    func readsLogLines() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("log.jsonl").path
        let (dispatcher, _) = try journaledChains()
        let log = try ActionLogMiddleware(path: path, checksums: .none)
        dispatcher.register(middleware: log)
        dispatcher.dispatch(ChainAction.mix(5), mode: .sync)
        log.close()
        let line = try Data(contentsOf: directory.url.appendingPathComponent("log.jsonl"))
        var decoder = try ActionLog.RecordDecoder(actionTypes: [ChainAction.self], source: path)
        let entry = try decoder.entry(from: line, number: 1)
        #expect(entry.action as? ChainAction == .mix(5))
        #expect(entry.storeIdentifiers == ["a", "b", "c", "d"] && entry.sequenceNumbers == [1, 1, 1, 1])
    }

    @Test("what is not a record is an error naming the source and the number")
    func errorsNameTheSource() throws {
        var decoder = try ActionLog.RecordDecoder(actionTypes: [ChainAction.self], source: "stream CHAINS")
        let cases: [(String, ActionLogError.Code, String)] = [
            ("{\"id\":1", .malformedLine, "Line 9 of stream CHAINS is not a valid log entry: not JSON"),
            ("{\"id\":1,\"time\":\"2026-01-01T00:00:00.000Z\"}", .malformedLine, "the key \"mode\" is missing"),
            ("{\"checkpoint\":true,\"time\":\"2026-01-01T00:00:00.000Z\",\"checks\":[]}", .malformedLine, "checkpoint"),
            (
                "{\"id\":1,\"time\":\"2026-01-01T00:00:00.000Z\",\"mode\":\"sync\",\"stores\":[],\"type\":\"Other\","
                    + "\"payload\":{}}",
                .unknownActionType, "holds an action of type Other"
            ),
            (
                "{\"id\":1,\"time\":\"2026-01-01T00:00:00.000Z\",\"mode\":\"sync\",\"stores\":[],"
                    + "\"type\":\"DispatchStoreJournalTests.ChainAction\",\"payload\":{\"mix\":\"x\"}}",
                .malformedLine, "Line 9 of stream CHAINS"
            ),
        ]
        for (text, code, phrase) in cases {
            #expect {
                _ = try decoder.entry(from: Data(text.utf8), number: 9)
            } throws: { error in
                guard let error = error as? ActionLogError else { return false }
                return error.code == code && error.path == "stream CHAINS" && error.line == 9
                    && error.message.contains(phrase)
            }
        }
    }

    @Test("an action type without a stable name is refused, naming the destination")
    func unstableNames() throws {
        enum Local: ActionType, Codable { case one }
        #expect {
            _ = try ActionLog.record(of: Local.one, storeIdentifiers: [], destination: "stream LOCAL")
        } throws: { error in
            (error as? ActionLogError)?.code == .unstableTypeName
                && (error as? ActionLogError)?.message.contains("stream LOCAL") == true
        }
        #expect {
            _ = try ActionLog.RecordDecoder(actionTypes: [Local.self], source: "stream LOCAL")
        } throws: { error in
            (error as? ActionLogError)?.code == .unstableTypeName
        }
    }
}
