import DispatchStore
import Foundation

/// The records of a log file, one at a time: what ``ActionLog`` and the journal read through.
///
/// Blank lines are skipped. Bytes after the last newline, and a last line that is not JSON, are a
/// torn tail (a crash while writing), reported in ``tornTail`` once the stream ends, never as an
/// error. Any other line that is not a record is a ``Item/malformed(_:)`` item; the caller decides
/// whether to stop.
final class RecordStream {
    /// What the stream yields.
    enum Item {
        /// A transaction's record.
        case entry(ActionLog.Entry)
        /// A checkpoint line (line number, digests).
        case checkpoint(line: Int, checks: [ActionRecord.Check])
        /// A line that is not a record, with the error naming it.
        case malformed(ActionLogError)
    }

    let path: String
    private let reader: LineReader
    private var decoder: ActionLog.RecordDecoder
    private var pending: LineReader.Line?
    /// The node array of the previous line's document, reused for the next.
    private var spareNodes: [JSONDocument.Node] = []
    private var ended = false
    /// The torn tail, known once ``next()`` returned `nil`.
    private(set) var tornTail: ActionLog.TornTail?
    /// The number of the last line read.
    private(set) var lastLine = 0

    /// Opens `path`.
    ///
    /// - Throws: ``ActionLogError/Code/unreadableFile`` naming the path, or
    ///   ``ActionLogError/Code/unstableTypeName`` when one of `actionTypes` has no stable name.
    init(path: String, actionTypes: [any (ActionType & Decodable).Type]) throws(ActionLogError) {
        self.path = path
        do {
            reader = try LineReader(path: path)
        } catch {
            throw ActionLogError.unreadable(path, reason: error.reason)
        }
        decoder = try ActionLog.RecordDecoder(actionTypes: actionTypes, source: path)
    }

    /// The next item, or `nil` at the end of the file.
    ///
    /// - Throws: ``ActionLogError/Code/unreadableFile`` when reading fails.
    func next() throws(ActionLogError) -> Item? {
        while !ended {
            guard let line = try nextLine() else {
                ended = true
                return nil
            }
            lastLine = line.number
            if line.isBlank && line.isTerminated { continue }
            guard line.isTerminated else {
                tornTail = ActionLog.TornTail(line: line.number, byteOffset: line.offset, byteCount: line.bytes.count)
                ended = true
                return nil
            }
            let document: JSONDocument
            do {
                document = try JSONDocument(bytes: line.bytes, reusing: spareNodes)
                spareNodes = []
            } catch {
                // The last line may be torn; any other is malformed.
                if let later = try nextNonBlankLine() {
                    pending = later
                    return .malformed(.malformed(line: line.number, path: path, reason: "not JSON: \(error.reason)"))
                }
                let size = lastOffsetSeen - line.offset
                tornTail = ActionLog.TornTail(line: line.number, byteOffset: line.offset, byteCount: size)
                ended = true
                return nil
            }
            let item = decoder.item(document, bytes: line.bytes, line: line.number, offset: line.offset)
            spareNodes = document.recycledNodes()
            return item
        }
        return nil
    }

    /// The offset after the last line read: how many bytes the stream went through.
    private(set) var lastOffsetSeen = 0

    private func nextLine() throws(ActionLogError) -> LineReader.Line? {
        if let pending {
            self.pending = nil
            return pending
        }
        do {
            let line = try reader.next()
            if let line { lastOffsetSeen = line.offset + line.bytes.count + (line.isTerminated ? 1 : 0) }
            return line
        } catch {
            throw ActionLogError.unreadable(path, reason: error.reason)
        }
    }

    /// Reads past blank lines; returns the first other line, or `nil` at the end of the file (an
    /// unterminated last line counts as the end: it is torn).
    private func nextNonBlankLine() throws(ActionLogError) -> LineReader.Line? {
        while let line = try nextLine() {
            guard line.isTerminated else { return nil }
            if !line.isBlank { return line }
        }
        return nil
    }

    /// Decodes a line's payload, the value of node `payload` of its `document`, with
    /// ``JSONNodeDecoder``, or, when that throws, with `JSONDecoder`, whose result or error then
    /// counts: what the line's `"payload"` gives `JSONDecoder`, always (the differential test holds it).
    ///
    /// - Parameters:
    ///   - type: The payload's type.
    ///   - document: The line, parsed.
    ///   - payload: The node of the value under the line's `"payload"` key.
    ///   - bytes: The line's bytes.
    /// - Returns: The payload.
    /// - Throws: `JSONDecoder`'s error when neither decodes it.
    static func decodePayload<Value: Decodable>(
        _ type: Value.Type,
        _ document: JSONDocument,
        at payload: Int,
        of bytes: [UInt8]
    ) throws -> Value {
        do {
            return try JSONNodeDecoder.decode(Value.self, from: document, at: payload)
        } catch {
            return try JSONDecoder().decode(Payload<Value>.self, from: Data(bytes)).payload
        }
    }

    /// A line, as `JSONDecoder` reads its payload.
    struct Payload<Value: Decodable>: Decodable {
        let payload: Value
    }
}
