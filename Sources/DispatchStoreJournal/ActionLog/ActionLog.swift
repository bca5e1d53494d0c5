public import DispatchStore
public import Foundation

/// Reading and replaying the JSON Lines files that ``ActionLogMiddleware`` writes.
///
/// ```swift
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer()))
/// let report = try ActionLog.replay(contentsOf: "actions.jsonl", into: dispatcher, actionTypes: [CounterAction.self])
/// print(report)  // replayed 1200 transactions
/// ```
///
/// Reading streams the file through a buffer of fixed size: memory does not grow with the log's
/// length (``read(contentsOf:actionTypes:)`` keeps the entries it returns, the others do not).
/// A line may hold up to ``maximumLineLength`` bytes; a longer one, or a file that never ends a
/// line (`/dev/zero`), is an error once that many bytes were read. An empty file is an empty log.
/// Readers take no lock: a log can be read while it is written (its last line may then be torn).
public enum ActionLog {
    /// The longest line a log or a journal holds, in bytes: 64 MiB.
    ///
    /// Readers refuse a longer line with an ``ActionLogError/Code/unreadableFile`` once they have
    /// read that much of it, so that a file without newlines costs bounded memory and time. Writers
    /// refuse to write one (``ActionLogError/Code/unencodableAction``, or a journal snapshot that
    /// fails), so that everything written can be read back.
    public static let maximumLineLength = 64 << 20

    /// One transaction read back from a log.
    public struct Entry: Sendable {
        /// The line it was read from, counting from 1.
        public let line: Int
        /// The offset of the line's first byte in the file.
        public let byteOffset: Int
        /// The original transaction's id.
        public let id: UInt64
        /// When the original transaction finished.
        public let time: Date
        /// The mode it was dispatched in.
        public let mode: DispatchMode
        /// The store the dispatch named with `to:`, if it named one.
        public let targetIdentifier: String?
        /// The stores that applied the action, in the order their operations started.
        ///
        /// Those that finished normally, and those whose operation ran and then was cancelled or
        /// failed (listed again in ``unfinishedStores``): their states changed either way.
        public let storeIdentifiers: [String]
        /// The number each of ``storeIdentifiers`` gave the action (`sequenceNumbers[i]` is `storeIdentifiers[i]`'s):
        /// its ``DispatchStore/Store/sequenceNumber`` right after applying it.
        ///
        /// Empty in logs written before sequence numbers existed.
        public let sequenceNumbers: [UInt64]
        /// The stores among ``storeIdentifiers`` whose operation was cancelled or failed after
        /// running.
        public let unfinishedStores: [String]
        /// The action, decoded.
        public let action: any ActionType
        /// State digests the line carries.
        let checks: [ActionRecord.Check]

        init(record: ActionRecord, action: any ActionType, line: Int, offset: Int) {
            self.line = line
            self.byteOffset = offset
            self.id = record.id
            self.time = record.time
            self.mode = record.mode
            self.targetIdentifier = record.target
            self.storeIdentifiers = record.stores
            self.sequenceNumbers = record.sequenceNumbers
            self.unfinishedStores = record.unfinished
            self.action = action
            self.checks = record.checks
        }

        /// The number `storeIdentifier` gave the action, if it applied it and the log records it.
        ///
        /// - Parameter storeIdentifier: A store's identifier.
        /// - Returns: The store's sequence number for this action, or `nil`.
        public func sequenceNumber(for storeIdentifier: String) -> UInt64? {
            guard let index = storeIdentifiers.firstIndex(of: storeIdentifier), index < sequenceNumbers.count else {
                return nil
            }
            return sequenceNumbers[index]
        }
    }

    /// The end of a file cut short by a crash while a line was written: bytes after the last
    /// newline, or a last line that is not JSON.
    public struct TornTail: Sendable, Hashable, CustomStringConvertible {
        /// The number of the torn line.
        public let line: Int
        /// The offset of its first byte.
        public let byteOffset: Int
        /// How many bytes it holds, to the end of the file.
        public let byteCount: Int
        /// Where the bytes were saved when they were cut away, if they were.
        public let savedPath: String?

        init(line: Int, byteOffset: Int, byteCount: Int, savedPath: String? = nil) {
            self.line = line
            self.byteOffset = byteOffset
            self.byteCount = byteCount
            self.savedPath = savedPath
        }

        /// For example `line 1201 (37 bytes from byte 204817)`.
        public var description: String {
            "line \(line) (\(byteCount) byte\(byteCount == 1 ? "" : "s") from byte \(byteOffset))"
        }
    }

    /// What a log holds: its entries, in file order, and the torn last line if there was one.
    public struct Contents: Sendable {
        /// The entries, one per complete line.
        public let entries: [Entry]
        /// The torn tail, skipped.
        public let tornTail: TornTail?

        /// The number of the last line when it was cut short (a crash while writing it) and skipped.
        public var truncatedLine: Int? {
            tornTail?.line
        }
    }

    /// What a streaming read went through.
    public struct ReadSummary: Sendable {
        /// How many entries were read.
        public let entryCount: Int
        /// The torn tail, skipped.
        public let tornTail: TornTail?
    }

    /// Reads a whole log into memory.
    ///
    /// Blank lines are ignored. A torn tail (see ``TornTail``) is skipped and reported in
    /// ``Contents/tornTail``. For a long log, prefer ``forEachEntry(in:actionTypes:_:)``, which
    /// holds one entry at a time.
    ///
    /// - Parameters:
    ///   - path: The log file.
    ///   - actionTypes: The action types the log may hold; each line's `type` must name one of them
    ///     (as ``typeName(of:)`` spells it).
    /// - Returns: The entries and the torn tail, if any.
    /// - Throws: ``ActionLogError`` naming the path: ``ActionLogError/Code/unreadableFile`` when the
    ///   file cannot be read (missing, a directory, a symbolic link loop), holds a line longer than
    ///   ``maximumLineLength`` (`/dev/zero` never ends one), or was cut short while it was read;
    ///   ``ActionLogError/Code/unstableTypeName`` for an action type without a
    ///   stable name; for a malformed line, ``ActionLogError/Code/malformedLine`` or
    ///   ``ActionLogError/Code/unknownActionType`` with its line number.
    public static func read(
        contentsOf path: String,
        actionTypes: [any (ActionType & Decodable).Type]
    ) throws(ActionLogError) -> Contents {
        var entries: [Entry] = []
        let stream = try RecordStream(path: path, actionTypes: actionTypes)
        while let item = try stream.next() {
            switch item {
            case .entry(let entry): entries.append(entry)
            case .checkpoint: break
            case .malformed(let error): throw error
            }
        }
        return Contents(entries: entries, tornTail: stream.tornTail)
    }

    /// Reads a log one entry at a time, calling `body` with each: memory does not grow with the
    /// log's length.
    ///
    /// ```swift
    /// let summary = try ActionLog.forEachEntry(in: path, actionTypes: [LedgerAction.self]) { entry in
    ///     if case .deposit(_, let cents) = entry.action as? LedgerAction { total += cents }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - path: The log file.
    ///   - actionTypes: The action types the log may hold.
    ///   - body: Called with each entry, in file order; throwing stops the read.
    /// - Returns: How many entries were read, and the torn tail if any.
    /// - Throws: The errors of ``read(contentsOf:actionTypes:)``, raised when the reading reaches the
    ///   line (the entries before it were given to `body`), and whatever `body` throws.
    @discardableResult
    public static func forEachEntry(
        in path: String,
        actionTypes: [any (ActionType & Decodable).Type],
        _ body: (Entry) throws -> Void
    ) throws -> ReadSummary {
        var count = 0
        // Lines are read and decoded on another thread while `body` runs on this one.
        let stream = try PrefetchingRecordStream(path: path, actionTypes: actionTypes)
        defer { stream.close() }
        while let item = try stream.next() {
            switch item {
            case .entry(let entry):
                count += 1
                try body(entry)
            case .checkpoint: break
            case .malformed(let error): throw error
            }
        }
        return ReadSummary(entryCount: count, tornTail: stream.tornTail)
    }

    /// The name a log gives an action type: its ``StablyNamed/stableName`` if it has one, otherwise
    /// `String(reflecting:)`, for example `"Inventory.InventoryAction"`.
    ///
    /// - Parameter type: The action type.
    /// - Returns: Its name in logs. For a type declared `private`, `fileprivate` or inside a
    ///   function, which logs refuse (``ActionLogError/Code/unstableTypeName``), a name that differs
    ///   from run to run.
    public static func typeName(of type: any ActionType.Type) -> String {
        ActionTypeNames.name(of: type)
    }

    // MARK: Internals

    static func describe(_ error: any Error) -> String {
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
}
