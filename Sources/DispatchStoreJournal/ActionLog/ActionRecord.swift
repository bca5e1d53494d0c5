import DispatchStore
import Foundation

/// One line of an action log or of a journal's records: a transaction, the stores that applied its
/// action with the sequence number each gave it, and the action.
///
/// ```json
/// {"id":42,"time":"2026-11-21T10:15:30.125Z","mode":"serial","stores":["stock","orders"],"seq":[17,17],"type":"Inventory.InventoryAction","payload":{"restock":{"item":"apple","quantity":5}}}
/// ```
///
/// Keys are written in a fixed order, `id` first; readers accept any order and ignore keys they do
/// not know. Optional keys: `target` (the store a dispatch named), `unfinished` (stores among
/// `stores` whose operation was cancelled or failed after running) and `checks` (state digests,
/// `[store, sequence number, 16 hex digits]`). A line holding `checkpoint` instead of an action
/// carries only `checks`: what every store's state was when the log was closed.
struct ActionRecord {
    var id: UInt64
    var time: Date
    var mode: DispatchMode
    var target: String?
    /// The stores that applied the action, in the order their operations started.
    var stores: [String]
    /// The number each of `stores` gave the action; empty in logs written before sequence numbers.
    var sequenceNumbers: [UInt64]
    /// The stores among `stores` whose operation did not finish normally.
    var unfinished: [String]
    var checks: [Check]
    /// The action type's name (``ActionLog/typeName(of:)``).
    var type: String

    /// A digest of one store's state right after it applied the action with `sequenceNumber`.
    struct Check: Sendable, Hashable {
        let storeIdentifier: String
        let sequenceNumber: UInt64
        let digest: UInt64
    }

    /// The record's line, with its newline, given the payload's JSON.
    func encodedLine(payload: Data) -> Data {
        var text = "{\"id\":\(id),\"time\":\"\(ActionRecord.format(time))\",\"mode\":\"\(mode)\","
        if let target { text += "\"target\":\(ActionRecord.quoted(target))," }
        text += "\"stores\":[\(stores.map(ActionRecord.quoted).joined(separator: ","))],"
        if !sequenceNumbers.isEmpty {
            text += "\"seq\":[\(sequenceNumbers.map(String.init).joined(separator: ","))],"
        }
        if !unfinished.isEmpty {
            text += "\"unfinished\":[\(unfinished.map(ActionRecord.quoted).joined(separator: ","))],"
        }
        if !checks.isEmpty { text += "\"checks\":\(ActionRecord.encoded(checks))," }
        text += "\"type\":\(ActionRecord.quoted(type)),\"payload\":"
        var data = Data(text.utf8)
        data.append(payload)
        data.append(contentsOf: [UInt8(ascii: "}"), UInt8(ascii: "\n")])
        return data
    }

    /// A checkpoint line, with its newline.
    static func checkpointLine(time: Date, checks: [Check]) -> Data {
        Data("{\"checkpoint\":true,\"time\":\"\(format(time))\",\"checks\":\(encoded(checks))}\n".utf8)
    }

    private static func encoded(_ checks: [Check]) -> String {
        let items = checks.map { check in
            "[\(quoted(check.storeIdentifier)),\(check.sequenceNumber),\"\(hex(check.digest))\"]"
        }
        return "[\(items.joined(separator: ","))]"
    }

    /// `digest` as 16 lowercase hexadecimal digits.
    static func hex(_ digest: UInt64) -> String {
        let digits = String(digest, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// `string` as a JSON string literal.
    static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }

    // MARK: Time

    static func format(_ date: Date) -> String {
        date.formatted(timeFormat)
    }

    /// Parses the time format records use; `yyyy-MM-ddTHH:mm:ss.SSSZ` without Foundation's parser,
    /// anything else ISO 8601 with it.
    static func parseTime(_ bytes: ArraySlice<UInt8>) -> Date? {
        if bytes.count == 24, let date = parseMilliseconds(bytes) { return date }
        return try? timeFormat.parse(String(decoding: bytes, as: UTF8.self))
    }

    private static func parseMilliseconds(_ bytes: ArraySlice<UInt8>) -> Date? {
        let base = bytes.startIndex
        func number(_ offset: Int, _ count: Int) -> Int? {
            var value = 0
            for index in base + offset..<base + offset + count {
                let digit = Int(bytes[index]) - 48
                guard digit >= 0 && digit < 10 else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        let separators: [(Int, UInt8)] = [(4, 45), (7, 45), (10, 84), (13, 58), (16, 58), (19, 46), (23, 90)]
        guard separators.allSatisfy({ bytes[base + $0.0] == $0.1 }),
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            let millisecond = number(20, 3),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        // Days since 1970-01-01 in the proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(seconds) + Double(millisecond) / 1_000)
    }

    private static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
}
