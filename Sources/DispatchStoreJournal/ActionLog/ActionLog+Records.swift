public import DispatchStore
public import Foundation

extension ActionLog {
    /// One record in the log's format, as one line of JSON without its newline: for sending an action
    /// somewhere else than a log file (a broker, a replication stream) in the form logs and journals
    /// use.
    ///
    /// The record is the one ``ActionLogMiddleware`` writes for a transaction, made before any store
    /// applied the action: it carries no sequence numbers (`seq`), and its `id`, `mode` and `stores`
    /// are what the caller says. ``RecordDecoder`` reads it back.
    ///
    /// ```swift
    /// let record = try ActionLog.record(of: CounterAction.add(2), storeIdentifiers: ["counter"], destination: "orders stream")
    /// // {"id":0,"time":"2026-11-21T10:15:30.125Z","mode":"sync","stores":["counter"],"type":"App.CounterAction","payload":{"add":{"_0":2}}}
    /// ```
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - id: The record's `id`; 0 when it stands for no transaction yet.
    ///   - mode: The record's `mode`: how the reader is to dispatch it.
    ///   - storeIdentifiers: The record's `stores`: the stores the action is meant for.
    ///   - time: The record's `time`.
    ///   - destination: Where the record goes, for error messages: a file, a stream.
    /// - Returns: The record's bytes: UTF-8 JSON, one line, no newline.
    /// - Throws: ``ActionLogError`` naming `destination`: ``ActionLogError/Code/unstableTypeName`` when
    ///   the action's type has no name another process could read (see ``StablyNamed``), or
    ///   ``ActionLogError/Code/unencodableAction`` when its `Encodable` conformance throws.
    /// - Note: Thread-safe.
    @_spi(DispatchStoreNATS)
    public static func record<Action: ActionType & Encodable>(
        of action: Action,
        id: UInt64 = 0,
        mode: DispatchMode = .sync,
        storeIdentifiers: [String],
        time: Date = Date(),
        destination: String
    ) throws(ActionLogError) -> Data {
        let type = try ActionTypeNames.stableName(of: Action.self, path: destination)
        let payload: Data
        do {
            payload = try ActionRecord.payload(of: action)
        } catch {
            throw ActionLogError(
                .unencodableAction,
                path: destination,
                message: "the action \(action) cannot be sent to \(destination): it failed to encode: \(error)"
            )
        }
        let record = ActionRecord(
            id: id,
            time: time,
            mode: mode,
            target: nil,
            stores: storeIdentifiers,
            sequenceNumbers: [],
            unfinished: [],
            checks: [],
            type: type
        )
        var line = record.encodedLine(payload: payload)
        line.removeLast()  // the newline
        return line
    }

    /// Reads single records, each in the format of one line of a log: what ``record(of:id:mode:storeIdentifiers:time:destination:)``
    /// makes, or a line ``ActionLogMiddleware`` wrote.
    ///
    /// ```swift
    /// var decoder = try ActionLog.RecordDecoder(actionTypes: [CounterAction.self], source: "orders stream")
    /// let entry = try decoder.entry(from: record, number: 17)
    /// dispatcher.dispatch(entry.action as! CounterAction, mode: .sync)
    /// ```
    ///
    /// A decoder remembers the type names it met, so that reading many records of a few types
    /// makes each name into a string once.
    ///
    /// - Note: Not thread-safe: use one decoder on one thread at a time.
    @_spi(DispatchStoreNATS)
    public struct RecordDecoder {
        /// What the records are read from, for error messages: a file, a stream.
        public let source: String
        private let types: [String: any (ActionType & Decodable).Type]
        private var typeNames = ActionRecord.TypeNames()
        /// The node array of the previous record's document, reused for the next.
        private var spareNodes: [JSONDocument.Node] = []

        /// Creates a decoder for records of `actionTypes`.
        ///
        /// - Parameters:
        ///   - actionTypes: The action types the records may hold; each record's `type` must name
        ///     one of them (as ``ActionLog/typeName(of:)`` spells it).
        ///   - source: What the records are read from, for error messages.
        /// - Throws: ``ActionLogError/Code/unstableTypeName`` naming `source` when one of
        ///   `actionTypes` has no stable name.
        public init(actionTypes: [any (ActionType & Decodable).Type], source: String) throws(ActionLogError) {
            self.source = source
            var types: [String: any (ActionType & Decodable).Type] = [:]
            for type in actionTypes {
                types[try ActionTypeNames.stableName(of: type, path: source)] = type
            }
            self.types = types
        }

        /// Decodes one record.
        ///
        /// - Parameters:
        ///   - bytes: The record: one JSON object, with or without a final newline.
        ///   - number: The record's number in its source (a line, a message's sequence number),
        ///     which becomes the entry's ``ActionLog/Entry/line`` and names it in errors.
        /// - Returns: The entry, its action decoded.
        /// - Throws: ``ActionLogError`` naming `source` and `number`:
        ///   ``ActionLogError/Code/malformedLine`` when the bytes are not a record (not JSON, a key
        ///   missing, a checkpoint, a payload that does not decode), or
        ///   ``ActionLogError/Code/unknownActionType`` for a type not among the decoder's.
        public mutating func entry(from bytes: Data, number: Int) throws(ActionLogError) -> Entry {
            var array = [UInt8](bytes)
            if array.last == UInt8(ascii: "\n") { array.removeLast() }
            let document: JSONDocument
            do {
                document = try JSONDocument(bytes: array, reusing: spareNodes)
                spareNodes = []
            } catch {
                throw .malformed(line: number, path: source, reason: "not JSON: \(error.reason)")
            }
            let item = item(document, bytes: array, line: number, offset: 0)
            spareNodes = document.recycledNodes()
            switch item {
            case .entry(let entry): return entry
            case .checkpoint: throw .malformed(line: number, path: source, reason: "it is a checkpoint, not a record")
            case .malformed(let error): throw error
            }
        }

        /// The item a parsed line holds: an entry with its action decoded, a checkpoint, or why it is
        /// neither.
        mutating func item(_ document: JSONDocument, bytes: [UInt8], line: Int, offset: Int) -> RecordStream.Item {
            let parsed: ActionRecord.Parsed
            do {
                parsed = try ActionRecord.parse(document, typeNames: &typeNames)
            } catch {
                return .malformed(.malformed(line: line, path: source, reason: error.reason))
            }
            switch parsed {
            case .checkpoint(let checks):
                return .checkpoint(line: line, checks: checks)
            case .record(let record, let payload):
                guard let type = types[record.type] else {
                    return .malformed(.unknownType(record.type, line: line, path: source, known: types.keys.sorted()))
                }
                do {
                    let action = try Self.decode(type, document, payload, bytes)
                    return .entry(ActionLog.Entry(record: record, action: action, line: line, offset: offset))
                } catch {
                    return .malformed(.malformed(line: line, path: source, reason: ActionLog.describe(error)))
                }
            }
        }

        /// Decodes the payload (see ``RecordStream/decodePayload(_:_:at:of:)``).
        private static func decode(
            _ type: any (ActionType & Decodable).Type,
            _ document: JSONDocument,
            _ payload: Int,
            _ bytes: [UInt8]
        ) throws -> any ActionType {
            func open<Action: ActionType & Decodable>(_: Action.Type) throws -> any ActionType {
                try RecordStream.decodePayload(Action.self, document, at: payload, of: bytes)
            }
            return try open(type)
        }
    }
}

extension ActionRecord {
    /// The JSON of a record's payload, as every record writes it (slashes unescaped).
    ///
    /// - Throws: What `JSONEncoder` throws for the value.
    static func payload(of value: some Encodable) throws -> Data {
        try PayloadEncoder.encode(value)
    }
}
