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
    ///
    /// Written byte by byte, without intermediate strings: it is on the path of every action a log,
    /// a journal or a replication stream records.
    func encodedLine(payload: Data) -> Data {
        var line: [UInt8] = []
        line.reserveCapacity(payload.count + type.utf8.count + 64 + stores.reduce(0) { $0 + $1.utf8.count + 3 })
        func append(_ text: StaticString) {
            text.withUTF8Buffer { line.append(contentsOf: $0) }
        }
        func append(list: [String]) {
            for (index, item) in list.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                ActionRecord.appendQuoted(item, to: &line)
            }
        }
        append("{\"id\":")
        JSONBytes.appendDecimal(id, to: &line)
        append(",\"time\":\"")
        ActionRecord.appendTime(time, to: &line)
        append("\",\"mode\":\"")
        line.append(contentsOf: mode.description.utf8)
        append("\",")
        if let target {
            append("\"target\":")
            ActionRecord.appendQuoted(target, to: &line)
            append(",")
        }
        append("\"stores\":[")
        append(list: stores)
        append("],")
        if !sequenceNumbers.isEmpty {
            append("\"seq\":[")
            for (index, number) in sequenceNumbers.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                JSONBytes.appendDecimal(number, to: &line)
            }
            append("],")
        }
        if !unfinished.isEmpty {
            append("\"unfinished\":[")
            append(list: unfinished)
            append("],")
        }
        if !checks.isEmpty {
            append("\"checks\":")
            line.append(contentsOf: ActionRecord.encoded(checks).utf8)
            append(",")
        }
        append("\"type\":")
        ActionRecord.appendQuoted(type, to: &line)
        append(",\"payload\":")
        line.append(contentsOf: payload)
        append("}\n")
        return Data(line)
    }

    /// Appends `string` as a JSON string literal (see ``quoted(_:)``).
    private static func appendQuoted(_ string: String, to line: inout [UInt8]) {
        guard string.utf8.allSatisfy({ JSONBytes.isPlain($0) }) else {
            line.append(contentsOf: quoted(string).utf8)
            return
        }
        line.append(UInt8(ascii: "\""))
        line.append(contentsOf: string.utf8)
        line.append(UInt8(ascii: "\""))
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

    /// Appends what ``format(_:)`` writes for `date`: computed here for the years 1970 to 9999 (the
    /// same digits as `Date.ISO8601FormatStyle`, milliseconds rounded down), formatted by Foundation
    /// otherwise.
    static func appendTime(_ date: Date, to line: inout [UInt8]) {
        let interval = date.timeIntervalSince1970
        // 1970-01-01 to 9999-12-31: the proleptic Gregorian calendar, four-digit years.
        guard interval >= 0, interval < 253_402_300_800 else {
            line.append(contentsOf: format(date).utf8)
            return
        }
        let wholeSeconds = interval.rounded(.down)
        let millisecond = min(999, Int(((interval - wholeSeconds) * 1_000).rounded(.down)))
        let seconds = Int(wholeSeconds)
        // The civil date of a day count (Howard Hinnant's civil_from_days).
        let days = seconds / 86_400 + 719_468
        let era = days / 146_097
        let dayOfEra = days - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        let secondOfDay = seconds % 86_400
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                line.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4)
        line.append(UInt8(ascii: "-"))
        digits(month, 2)
        line.append(UInt8(ascii: "-"))
        digits(day, 2)
        line.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3_600, 2)
        line.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2)
        line.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        line.append(UInt8(ascii: "."))
        digits(millisecond, 3)
        line.append(UInt8(ascii: "Z"))
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
