import DispatchStore
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
            let length = line.utf8.count + encoded.count + 1
            guard length <= ActionLog.maximumLineLength else {
                throw JournalError(
                    .writeFailed,
                    path: path,
                    storeIdentifier: snapshot.storeIdentifier,
                    message: "cannot write \(path): the state of store '\(snapshot.storeIdentifier)' takes "
                        + "\(length) bytes, more than the \(LineReader.describe(size: ActionLog.maximumLineLength)) "
                        + "a line may hold"
                )
            }
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

    /// The error for the snapshot `source` written with format version `version`, newer than this
    /// program reads.
    static func newerFormat(_ version: Int, source: String, note: String = "") -> JournalError {
        JournalError(
            .newerFormat,
            path: source,
            message: "\(source) has snapshot format version \(version), newer than the version \(formatVersion) this "
                + "program reads; use a newer program" + note
        )
    }

    /// Reads and checks the snapshot at `path`, one line at a time: a file that is not one the
    /// journal wrote (a device, a line without end) costs bounded memory and time.
    ///
    /// - Throws: ``Problem/damaged(_:)`` naming what is wrong, or ``Problem/newer(_:)``.
    static func read(_ path: String) throws(Problem) -> JournalSnapshot {
        var status = stat()
        guard stat(path, &status) == 0 else { throw .damaged("it cannot be read: \(SystemReason.current(path: path))") }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw .damaged("it is \(SystemReason.kind(status.st_mode)), not a file the journal wrote")
        }
        do {
            let reader = try LineReader(path: path)
            return try parse { try reader.next().map { ($0.bytes, $0.isTerminated) } }
        } catch let problem as Problem {
            throw problem
        } catch let failure as LineReader.Failure {
            throw .damaged("it cannot be read: \(failure.reason)")
        } catch {
            throw .damaged("it cannot be read: \(error)")
        }
    }

    /// Checks and reads a snapshot's bytes.
    ///
    /// - Throws: ``Problem/damaged(_:)`` naming what is wrong, or ``Problem/newer(_:)``.
    static func parse(_ bytes: [UInt8]) throws(Problem) -> JournalSnapshot {
        var start = 0
        do {
            return try parse {
                guard start < bytes.count else { return nil }
                let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
                defer { start = end + 1 }
                return (Array(bytes[start..<end]), end < bytes.count)
            }
        } catch let problem as Problem {
            throw problem
        } catch {
            throw .damaged("it cannot be read: \(error)")
        }
    }

    /// Checks and reads a snapshot given line by line (its bytes and whether a newline ends it).
    ///
    /// The lines are checked against the header's size and digest before any is used.
    private static func parse(nextLine: () throws -> ([UInt8], Bool)?) throws -> JournalSnapshot {
        guard let (headerBytes, headerEnds) = try nextLine(), headerEnds else {
            throw Problem.damaged("it has no complete header line")
        }
        guard let header = try? JSONDocument(bytes: headerBytes),
            let format = header.member("format", in: 0).flatMap(header.string(at:)), format == formatName,
            let version = header.member("version", in: 0).flatMap(header.integer(at:))
        else { throw Problem.damaged("its first line is not a snapshot header") }
        guard version.magnitude <= UInt64(formatVersion) else { throw Problem.newer(Int(version.magnitude)) }
        guard let generation = number("generation", header), let recordCount = number("records", header),
            let count = number("bytes", header),
            let digestText = header.member("digest", in: 0).flatMap(header.string(at:)),
            let digest = UInt64(digestText, radix: 16)
        else { throw Problem.damaged("its header lacks generation, records, bytes or digest") }
        var lines: [[UInt8]] = []
        var size = 0
        var hash = StateDigest.fnvBasis
        while let (line, ends) = try nextLine() {
            size += line.count + (ends ? 1 : 0)
            guard size <= count else { break }
            hash = StateDigest.fnv(line, continuing: hash)
            if ends { hash = StateDigest.fnv(CollectionOfOne(0x0A), continuing: hash) }
            lines.append(line)
        }
        guard size == count else {
            throw Problem.damaged(
                "it holds \(size > count ? "more than \(count)" : "\(size)") bytes of states where its header says "
                    + "\(count)\(size < count ? " (cut short?)" : "")"
            )
        }
        guard hash == digest else { throw Problem.damaged("its states do not match their digest") }
        return JournalSnapshot(generation: generation, recordCount: recordCount, stores: try lines.map(stored))
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
