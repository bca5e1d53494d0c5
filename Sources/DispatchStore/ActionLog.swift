public import Foundation

/// Reading and replaying the JSON Lines files that ``ActionLogMiddleware`` writes.
///
/// ```swift
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer()))
/// let report = try ActionLog.replay(contentsOf: "actions.jsonl", into: dispatcher, actionTypes: [CounterAction.self])
/// print(report)  // replayed 1200 transactions
/// ```
public enum ActionLog {
    /// One transaction read back from a log.
    public struct Entry: Sendable {
        /// The line it was read from, counting from 1.
        public let line: Int
        /// The original transaction's id.
        public let id: UInt64
        /// When the original transaction finished.
        public let time: Date
        /// The mode it was dispatched in.
        public let mode: DispatchMode
        /// The store the dispatch named with `to:`, if it named one.
        public let targetIdentifier: String?
        /// The stores that handled it, in the order they ran.
        public let storeIdentifiers: [String]
        /// The action, decoded.
        public let action: any ActionType
    }

    /// What a log holds: its entries, in file order, and the truncated last line if there was one.
    public struct Contents: Sendable {
        /// The entries, one per complete line.
        public let entries: [Entry]
        /// The number of the last line when it was cut short (a crash while writing it) and skipped.
        public let truncatedLine: Int?
    }

    /// What a replay did.
    public struct ReplayReport: Sendable, CustomStringConvertible {
        /// How many transactions were replayed.
        public let replayed: Int
        /// The number of the last line when it was cut short and skipped.
        public let truncatedLine: Int?
        /// The lines whose replayed transaction did not end as logged: another set of stores handled
        /// it, or one of them was cancelled or failed.
        public let mismatchedLines: [Int]

        /// A line such as `replayed 1200 transactions; skipped truncated line 1201`.
        public var description: String {
            var text = "replayed \(replayed) transaction\(replayed == 1 ? "" : "s")"
            if let truncatedLine { text += "; skipped truncated line \(truncatedLine)" }
            if !mismatchedLines.isEmpty {
                text += "; \(mismatchedLines.count) did not end as logged (lines "
                text += mismatchedLines.prefix(10).map(String.init).joined(separator: ", ")
                text += mismatchedLines.count > 10 ? ", ...)" : ")"
            }
            return text
        }
    }

    /// Reads a log.
    ///
    /// Blank lines are ignored. A last line that does not end with a newline and is not valid JSON
    /// was cut short by a crash: it is skipped and reported in ``Contents/truncatedLine``.
    ///
    /// - Parameters:
    ///   - path: The log file.
    ///   - actionTypes: The action types the log may hold; each line's `type` must name one of them
    ///     (as `String(reflecting:)` spells it).
    /// - Returns: The entries and the truncated line, if any.
    /// - Throws: ``ActionLogError`` naming the path: ``ActionLogError/Code/unreadableFile`` when the
    ///   file cannot be read; for any other malformed line, ``ActionLogError/Code/malformedLine`` or
    ///   ``ActionLogError/Code/unknownActionType`` with its line number.
    public static func read(
        contentsOf path: String,
        actionTypes: [any (ActionType & Decodable).Type]
    ) throws(ActionLogError) -> Contents {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ActionLogError.unreadable(path, reason: (error as NSError).localizedDescription)
        }
        var types: [String: any (ActionType & Decodable).Type] = [:]
        for type in actionTypes {
            types[typeName(of: type)] = type
        }
        let decoder = JSONDecoder()
        var entries: [Entry] = []
        var truncatedLine: Int?
        let newline = UInt8(ascii: "\n")
        var start = data.startIndex
        var number = 0
        while start < data.endIndex {
            number += 1
            let end = data[start...].firstIndex(of: newline)
            let lineData = data[start..<(end ?? data.endIndex)]
            start = end.map { data.index(after: $0) } ?? data.endIndex
            if lineData.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") })
            {
                continue
            }
            do {
                let line = try decoder.decode(DecodedLine.self, from: lineData)
                guard let type = types[line.type] else {
                    throw ActionLogError.unknownType(line.type, line: number, path: path, known: types.keys.sorted())
                }
                let action = try line.decodeAction(as: type, with: decoder, from: lineData)
                entries.append(
                    Entry(
                        line: number,
                        id: line.id,
                        time: line.time,
                        mode: line.mode,
                        targetIdentifier: line.target,
                        storeIdentifiers: line.stores,
                        action: action
                    )
                )
            } catch let error as ActionLogError {
                throw error
            } catch {
                if end == nil, (try? JSONSerialization.jsonObject(with: lineData)) == nil {
                    truncatedLine = number
                    continue
                }
                throw ActionLogError.malformed(line: number, path: path, reason: describe(error))
            }
        }
        return Contents(entries: entries, truncatedLine: truncatedLine)
    }

    /// Replays a log into a dispatcher: dispatches every logged action again, one after the other,
    /// in the order of the file, and returns once the last one has finished.
    ///
    /// Give it a dispatcher with the same stores (identifiers, reducers, initial states) as the one
    /// that wrote the log, and the stores end in the same states. Each entry is dispatched with
    /// ``DispatchMode/sync``, to the stores the log says handled it: in one dispatch when those are
    /// exactly the stores that handle its action type, otherwise to each of them by identifier, in
    /// the logged order. The log is read completely before the first dispatch, so a malformed line
    /// stops the replay before it changes anything.
    ///
    /// - Parameters:
    ///   - path: The log file.
    ///   - dispatcher: The dispatcher to replay into.
    ///   - actionTypes: The action types the log may hold.
    /// - Returns: How many transactions were replayed, the truncated last line if any, and the lines
    ///   whose replay did not end as logged.
    /// - Throws: The errors of ``read(contentsOf:actionTypes:)``.
    /// - Note: Reducers that dispatch further actions will dispatch them again during a replay,
    ///   while the log holds them too; keep such side effects out of a dispatcher you replay into.
    @discardableResult
    public static func replay(
        contentsOf path: String,
        into dispatcher: Dispatcher,
        actionTypes: [any (ActionType & Decodable).Type]
    ) throws(ActionLogError) -> ReplayReport {
        let contents = try read(contentsOf: path, actionTypes: actionTypes)
        var mismatched: [Int] = []
        for entry in contents.entries {
            let handlers = Set(
                dispatcher.stores.filter { $0.actionType == type(of: entry.action) }.map(\.identifier)
            )
            let logged = entry.storeIdentifiers
            var handled: [String] = []
            var clean = true
            if entry.targetIdentifier == nil && handlers == Set(logged) {
                let result = dispatchAndReport(entry.action, to: nil, into: dispatcher)
                handled = result.handledStores
                clean = result.succeeded
            } else {
                for identifier in logged {
                    let result = dispatchAndReport(entry.action, to: identifier, into: dispatcher)
                    handled += result.handledStores
                    clean = clean && result.succeeded
                }
            }
            if !clean || handled != logged { mismatched.append(entry.line) }
        }
        return ReplayReport(
            replayed: contents.entries.count,
            truncatedLine: contents.truncatedLine,
            mismatchedLines: mismatched
        )
    }

    /// The name a log gives an action type: `String(reflecting:)`, for example `"Inventory.InventoryAction"`.
    ///
    /// - Parameter type: The action type.
    /// - Returns: Its module-qualified name.
    public static func typeName(of type: any ActionType.Type) -> String {
        String(reflecting: type)
    }

    // MARK: Internals

    private static func dispatchAndReport(
        _ action: any ActionType,
        to identifier: String?,
        into dispatcher: Dispatcher
    ) -> DispatchResult {
        let result = LockedBox<DispatchResult?>(nil)
        func open<Action: ActionType>(_ action: Action) {
            dispatcher.dispatch(action, to: identifier, mode: .sync) { outcome in
                result.withLockedValue { $0 = outcome }
            }
        }
        open(action)
        // `.sync` runs the completion before `dispatch` returns.
        return result.withLockedValue { $0! }
    }

    private static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            return context.underlyingError.map { "\(context.debugDescription) (\($0))" } ?? context.debugDescription
        case DecodingError.keyNotFound(let key, _):
            return "the key \"\(key.stringValue)\" is missing"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return "\(path.isEmpty ? "" : "\(path): ")\(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    /// The JSON encoder for log lines.
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    static func formatTime(_ date: Date) -> String {
        date.formatted(timeFormat)
    }

    static func parseTime(_ text: String) -> Date? {
        try? timeFormat.parse(text)
    }

    private static let timeFormat = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

    /// One line as ``ActionLogMiddleware`` writes it, with its keys in a fixed order (`id` first).
    struct Line {
        let id: UInt64
        let time: Date
        let mode: DispatchMode
        let target: String?
        let stores: [String]
        let type: String
        let payload: any Encodable

        /// The line's JSON, without the newline.
        func encoded() throws -> Data {
            var text = "{\"id\":\(id),\"time\":\"\(ActionLog.formatTime(time))\",\"mode\":\"\(mode)\","
            if let target { text += "\"target\":\(quoted(target))," }
            text += "\"stores\":[\(stores.map(quoted).joined(separator: ","))],\"type\":\(quoted(type)),\"payload\":"
            var data = Data(text.utf8)
            data.append(try ActionLog.encoder().encode(payload))
            data.append(UInt8(ascii: "}"))
            return data
        }

        /// `string` as a JSON string literal.
        private func quoted(_ string: String) -> String {
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
    }

    /// One line read back, without its payload (decoded once its type is known).
    private struct DecodedLine: Decodable {
        let id: UInt64
        let time: Date
        let mode: DispatchMode
        let target: String?
        let stores: [String]
        let type: String

        enum CodingKeys: String, CodingKey {
            case id, time, mode, target, stores, type, payload
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(UInt64.self, forKey: .id)
            let timeText = try container.decode(String.self, forKey: .time)
            guard let time = ActionLog.parseTime(timeText) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .time,
                    in: container,
                    debugDescription: "time \"\(timeText)\" is not an ISO 8601 date"
                )
            }
            self.time = time
            let modeText = try container.decode(String.self, forKey: .mode)
            guard let mode = DispatchMode(name: modeText) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .mode,
                    in: container,
                    debugDescription: "mode \"\(modeText)\" is not async, sync, serial or mainThread"
                )
            }
            self.mode = mode
            target = try container.decodeIfPresent(String.self, forKey: .target)
            stores = try container.decode([String].self, forKey: .stores)
            type = try container.decode(String.self, forKey: .type)
        }

        /// Decodes the line's payload as `type`.
        func decodeAction(
            as type: any (ActionType & Decodable).Type,
            with decoder: JSONDecoder,
            from data: Data
        ) throws -> any ActionType {
            func decode<Action: ActionType & Decodable>(_: Action.Type) throws -> any ActionType {
                try decoder.decode(Payload<Action>.self, from: data).payload
            }
            return try decode(type)
        }
    }

    private struct Payload<Action: Decodable>: Decodable {
        let payload: Action
    }
}
