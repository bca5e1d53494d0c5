import DispatchStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ActionRecord {
    /// What a line holds.
    enum Parsed {
        /// A transaction's record and the node of its payload.
        case record(ActionRecord, payload: Int)
        /// The digests written when the log was closed.
        case checkpoint([Check])
    }

    /// Why a line that is JSON is not a record: a phrase naming the key.
    struct Problem: Error {
        let reason: String
    }

    /// The type names met so far, so that each is made into a string once.
    struct TypeNames {
        private var known: [(bytes: [UInt8], name: String)] = []

        /// The name in node `index`, the same string as the last time these bytes were met.
        mutating func name(in document: JSONDocument, at index: Int) -> String? {
            let node = document.nodes[index]
            guard node.kind == .string else { return document.string(at: index) }
            let bytes = document.bytes[node.start..<node.start + node.count]
            if let entry = known.first(where: { $0.bytes.elementsEqual(bytes) }) { return entry.name }
            guard let name = document.string(at: index) else { return nil }
            if known.count == 16 { known.removeFirst() }
            known.append((Array(bytes), name))
            return name
        }
    }

    /// Reads the record in `document`, leaving the payload undecoded.
    ///
    /// - Parameters:
    ///   - document: The line, parsed.
    ///   - typeNames: The type names met in earlier lines.
    /// - Returns: The record and its payload's node, or the checkpoint.
    /// - Throws: ``Problem`` naming the missing or malformed key.
    static func parse(_ document: JSONDocument, typeNames: inout TypeNames) throws(Problem) -> Parsed {
        guard document.nodes.first?.kind == .object else { throw Problem(reason: "the line is not a JSON object") }
        guard document.hasStringKeys(0) else { throw Problem(reason: "a key is not a valid string") }
        var id: UInt64?
        var time: Date?
        var mode: DispatchMode?
        var target: String?
        var stores: [String]?
        var sequenceNumbers: [UInt64] = []
        var unfinished: [String] = []
        var checks: [Check] = []
        var type: String?
        var payload: Int?
        var isCheckpoint = false
        var seen: UInt16 = 0  // a bit per RecordKey met
        var key = 1
        for _ in 0..<document.nodes[0].count {
            let value = key + 1
            defer { key = document.nodes[value].next }
            // Keys written with escapes or beyond ASCII are read as JSONDecoder reads them.
            let recordKey =
                document.nodes[key].kind == .string
                ? RecordKey(document, key) : RecordKey(name: document.string(at: key) ?? "")
            // A key given twice counts the first time, as JSONDecoder reads it.
            let bit = recordKey.bit
            guard seen & bit == 0 else { continue }
            if recordKey != .other { seen |= bit }
            switch recordKey {
            case .id:
                guard let (negative, magnitude) = document.integer(at: value), !negative else {
                    throw Problem(reason: "\"id\" must be a whole number")
                }
                id = magnitude
            case .time:
                let node = document.nodes[value]
                guard node.kind == .string,
                    let parsed = parseTime(document.bytes[node.start..<node.start + node.count])
                else {
                    throw Problem(reason: "\"time\" must be an ISO 8601 date")
                }
                time = parsed
            case .mode:
                guard let text = document.string(at: value), let parsed = DispatchMode(name: text) else {
                    throw Problem(reason: "\"mode\" must be async, sync, serial or mainThread")
                }
                mode = parsed
            case .target:
                guard let text = document.string(at: value) else {
                    throw Problem(reason: "\"target\" must be a string")
                }
                target = text
            case .stores:
                stores = try strings(document, value, "stores")
            case .seq:
                sequenceNumbers = try numbers(document, value)
            case .unfinished:
                unfinished = try strings(document, value, "unfinished")
            case .checks:
                checks = try parseChecks(document, value)
            case .type:
                guard let text = typeNames.name(in: document, at: value) else {
                    throw Problem(reason: "\"type\" must be a string")
                }
                type = text
            case .payload:
                payload = value
            case .checkpoint:
                isCheckpoint = true
            case .other:
                break
            }
        }
        if isCheckpoint { return .checkpoint(checks) }
        guard let id else { throw Problem(reason: "the key \"id\" is missing") }
        guard let time else { throw Problem(reason: "the key \"time\" is missing") }
        guard let mode else { throw Problem(reason: "the key \"mode\" is missing") }
        guard let stores else { throw Problem(reason: "the key \"stores\" is missing") }
        guard let type else { throw Problem(reason: "the key \"type\" is missing") }
        guard let payload else { throw Problem(reason: "the key \"payload\" is missing") }
        guard sequenceNumbers.isEmpty || sequenceNumbers.count == stores.count else {
            throw Problem(reason: "\"seq\" must hold one number per store in \"stores\"")
        }
        let record = ActionRecord(
            id: id,
            time: time,
            mode: mode,
            target: target,
            stores: stores,
            sequenceNumbers: sequenceNumbers,
            unfinished: unfinished,
            checks: checks,
            type: type
        )
        return .record(record, payload: payload)
    }

    private static func strings(_ document: JSONDocument, _ index: Int, _ key: String) throws(Problem) -> [String] {
        guard document.nodes[index].kind == .array else {
            throw Problem(reason: "\"\(key)\" must be an array of strings")
        }
        var result: [String] = []
        result.reserveCapacity(document.nodes[index].count)
        var element = index + 1
        for _ in 0..<document.nodes[index].count {
            guard let text = document.string(at: element) else {
                throw Problem(reason: "\"\(key)\" must be an array of strings")
            }
            result.append(text)
            element = document.nodes[element].next
        }
        return result
    }

    private static func numbers(_ document: JSONDocument, _ index: Int) throws(Problem) -> [UInt64] {
        guard document.nodes[index].kind == .array else { throw Problem(reason: "\"seq\" must be an array of numbers") }
        var result: [UInt64] = []
        result.reserveCapacity(document.nodes[index].count)
        var element = index + 1
        for _ in 0..<document.nodes[index].count {
            guard let (negative, magnitude) = document.integer(at: element), !negative, magnitude > 0 else {
                throw Problem(reason: "\"seq\" must hold positive whole numbers")
            }
            result.append(magnitude)
            element = document.nodes[element].next
        }
        return result
    }

    private static func parseChecks(_ document: JSONDocument, _ index: Int) throws(Problem) -> [Check] {
        let problem = Problem(reason: "\"checks\" must hold [store, sequence number, 16 hex digits] triples")
        guard document.nodes[index].kind == .array else { throw problem }
        var result: [Check] = []
        var element = index + 1
        for _ in 0..<document.nodes[index].count {
            guard document.nodes[element].kind == .array, document.nodes[element].count == 3,
                let store = document.string(at: element + 1),
                let (negative, sequenceNumber) = document.integer(at: element + 2), !negative,
                let hex = document.string(at: document.nodes[element + 2].next), hex.utf8.count == 16,
                let digest = UInt64(hex, radix: 16)
            else { throw problem }
            result.append(Check(storeIdentifier: store, sequenceNumber: sequenceNumber, digest: digest))
            element = document.nodes[element].next
        }
        return result
    }
}

/// The keys a record may hold, recognised from their bytes without making a string.
private enum RecordKey: String {
    case id, time, mode, target, stores, seq, unfinished, checks, type, payload, checkpoint, other

    /// The key named `name`.
    init(name: String) {
        self = RecordKey(rawValue: name) ?? .other
    }

    /// The key's bit in a set of keys held as a `UInt16`; none for `.other`.
    var bit: UInt16 {
        switch self {
        case .id: 1
        case .time: 1 << 1
        case .mode: 1 << 2
        case .target: 1 << 3
        case .stores: 1 << 4
        case .seq: 1 << 5
        case .unfinished: 1 << 6
        case .checks: 1 << 7
        case .type: 1 << 8
        case .payload: 1 << 9
        case .checkpoint: 1 << 10
        case .other: 0
        }
    }

    init(_ document: JSONDocument, _ index: Int) {
        let node = document.nodes[index]
        func matches(_ text: StaticString) -> Bool {
            text.utf8CodeUnitCount == node.count
                && document.bytes.withUnsafeBufferPointer { buffer in
                    memcmp(buffer.baseAddress! + node.start, text.utf8Start, node.count) == 0
                }
        }
        switch node.count {
        case 2: self = matches("id") ? .id : .other
        case 3: self = matches("seq") ? .seq : .other
        case 4: self = matches("time") ? .time : matches("mode") ? .mode : matches("type") ? .type : .other
        case 6: self = matches("stores") ? .stores : matches("target") ? .target : matches("checks") ? .checks : .other
        case 7: self = matches("payload") ? .payload : .other
        case 10: self = matches("unfinished") ? .unfinished : matches("checkpoint") ? .checkpoint : .other
        default: self = .other
        }
    }
}
