import Foundation

/// A snapshot file: a header line, then one line per store.
///
/// ```json
/// {"format":"DispatchStore snapshot","version":1,"generation":41,"time":"2026-11-21T10:15:30.125Z","records":41000,"bytes":2817,"digest":"9f3a2b1c0d4e5f60"}
/// {"store":"stock","version":1,"seq":41000,"type":"Inventory.StockState","state":{...}}
/// ```
///
/// `records` counts the records written before the snapshot was taken; `bytes` and `digest`
/// (FNV-1a, 64 bits) cover everything after the header, so that a damaged or incomplete file is
/// recognised before anything in it is used.
struct JournalSnapshot {
    static let formatName = "DispatchStore snapshot"
    static let formatVersion = 1

    /// One store's state as the snapshot holds it.
    struct Stored {
        let storeIdentifier: String
        let version: Int
        let sequenceNumber: UInt64
        /// The state's JSON.
        let state: Data
    }

    let generation: Int
    let recordCount: Int
    let stores: [Stored]

    /// Why a snapshot cannot be used: damaged (try an older one), or written by a newer program
    /// (stop: nothing older is better).
    enum Problem: Error {
        case damaged(String)
        case newer(Int)
    }

    /// The file's bytes for `cut`, taken when `recordCount` records had been written.
    ///
    /// - Throws: ``JournalError`` naming `path` and the store whose state failed to encode.
    static func encode(
        generation: Int,
        recordCount: Int,
        cut: [StoreSnapshot],
        path: String
    ) throws(JournalError) -> Data {
        var body = Data()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        for snapshot in cut {
            guard let state = snapshot.state as? any Encodable else { continue }
            let encoded: Data
            do {
                encoded = try encoder.encode(state)
            } catch {
                throw JournalError(
                    .writeFailed,
                    path: path,
                    storeIdentifier: snapshot.storeIdentifier,
                    message: "cannot write \(path): the state of store '\(snapshot.storeIdentifier)' failed to encode: "
                        + "\(error)"
                )
            }
            let type = Swift.type(of: snapshot.state)
            var line = "{\"store\":\(ActionRecord.quoted(snapshot.storeIdentifier)),\"version\":\(type.journalVersion),"
            line +=
                "\"seq\":\(snapshot.sequenceNumber),\"type\":\(ActionRecord.quoted(String(reflecting: type))),\"state\":"
            body.append(Data(line.utf8))
            body.append(encoded)
            body.append(contentsOf: [UInt8(ascii: "}"), UInt8(ascii: "\n")])
        }
        var header = "{\"format\":\"\(formatName)\",\"version\":\(formatVersion),\"generation\":\(generation),"
        header += "\"time\":\"\(ActionRecord.format(Date()))\",\"records\":\(recordCount),"
        header += "\"bytes\":\(body.count),\"digest\":\"\(ActionRecord.hex(StateDigest.fnv(body)))\"}\n"
        var file = Data(header.utf8)
        file.append(body)
        return file
    }

    /// Reads and checks the snapshot at `path`.
    ///
    /// - Throws: ``Problem/damaged(_:)`` naming what is wrong, or ``Problem/newer(_:)``.
    static func read(_ path: String) throws(Problem) -> JournalSnapshot {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .damaged("it cannot be read: \(JournalDirectory.reason(error))")
        }
        guard let newline = bytes.firstIndex(of: 0x0A) else { throw .damaged("it has no complete header line") }
        guard let header = try? JSONDocument(bytes: Array(bytes[..<newline])),
            let format = header.member("format", in: 0).flatMap(header.string(at:)), format == formatName,
            let version = header.member("version", in: 0).flatMap(header.integer(at:))
        else { throw .damaged("its first line is not a snapshot header") }
        guard version.magnitude <= UInt64(formatVersion) else { throw .newer(Int(version.magnitude)) }
        guard let generation = number("generation", header), let recordCount = number("records", header),
            let count = number("bytes", header),
            let digestText = header.member("digest", in: 0).flatMap(header.string(at:)),
            let digest = UInt64(digestText, radix: 16)
        else { throw .damaged("its header lacks generation, records, bytes or digest") }
        let body = bytes[(newline + 1)...]
        guard body.count == count else {
            throw .damaged("it holds \(body.count) bytes of states where its header says \(count) (cut short?)")
        }
        guard StateDigest.fnv(body) == digest else { throw .damaged("its states do not match their digest") }
        var stores: [Stored] = []
        var start = body.startIndex
        while start < body.endIndex {
            let end = body[start...].firstIndex(of: 0x0A) ?? body.endIndex
            stores.append(try stored(Array(body[start..<end])))
            start = end + 1
        }
        return JournalSnapshot(generation: generation, recordCount: recordCount, stores: stores)
    }

    private static func number(_ key: String, _ document: JSONDocument) -> Int? {
        guard let value = document.member(key, in: 0).flatMap(document.integer(at:)), !value.negative else {
            return nil
        }
        return Int(exactly: value.magnitude)
    }

    private static func stored(_ line: [UInt8]) throws(Problem) -> Stored {
        guard let document = try? JSONDocument(bytes: line),
            let store = document.member("store", in: 0).flatMap(document.string(at:)),
            let version = number("version", document),
            let sequenceNumber = document.member("seq", in: 0).flatMap(document.integer(at:)),
            document.member("type", in: 0).flatMap(document.string(at:)) != nil,
            let state = document.member("state", in: 0), line.last == UInt8(ascii: "}")
        else { throw .damaged("a store's line is not a stored state") }
        let node = document.nodes[state]
        // A string node starts after its opening quote.
        let isString = node.kind == .string || node.kind == .unicodeString || node.kind == .escapedString
        let stateBytes = line[(isString ? node.start - 1 : node.start)..<line.count - 1]
        return Stored(
            storeIdentifier: store,
            version: version,
            sequenceNumber: sequenceNumber.magnitude,
            state: Data(stateBytes)
        )
    }
}
