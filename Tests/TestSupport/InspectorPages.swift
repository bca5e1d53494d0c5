import Foundation

/// A page the inspector wrote (`--report`), read back: its embedded data, parsed.
public struct InspectorPage {
    /// The page's HTML.
    public let html: String
    /// The data the page embeds (see Sources/DispatchStoreInspector/Page/PageData.swift).
    public let data: [String: Any]

    /// What is wrong with a page that cannot be read.
    public struct Failure: Error, CustomStringConvertible {
        /// The problem.
        public let description: String
    }

    /// Reads the page at `path`.
    ///
    /// - Throws: When the file cannot be read or holds no data element with a JSON object.
    public init(path: String) throws {
        try self.init(html: try String(contentsOfFile: path, encoding: .utf8))
    }

    /// Reads the page `html`.
    ///
    /// - Throws: When it holds no data element with a JSON object.
    public init(html: String) throws {
        self.html = html
        let opening = "<script id=\"inspector-data\" type=\"application/json\">"
        guard let start = html.range(of: opening),
            let end = html.range(of: "</script>", range: start.upperBound..<html.endIndex),
            let object = try JSONSerialization.jsonObject(with: Data(html[start.upperBound..<end.lowerBound].utf8))
                as? [String: Any]
        else { throw Failure(description: "the page holds no inspector data") }
        data = object
    }

    /// The rows of the timeline.
    public var rows: [[Any]] {
        data["rows"] as? [[Any]] ?? []
    }

    /// The kind of each row: 0 a transaction, 1 a problem, 2 a snapshot or checkpoint, 3 a restore.
    public var rowKinds: [Int] {
        rows.map { ($0[0] as? NSNumber)?.intValue ?? -1 }
    }

    /// The ids of the transaction rows, in order.
    public var transactionIDs: [UInt64] {
        rows.filter { ($0[0] as? NSNumber)?.intValue == 0 }.map { ($0[1] as? NSNumber)?.uint64Value ?? 0 }
    }

    /// The `extra` object of each transaction row (line, history entry, ...), `[:]` when it has none;
    /// `1`, the line after the previous row's in the same file, resolved.
    public var transactionExtras: [[String: Any]] {
        var line = 0
        var file: Any = NSNull()
        return rows.filter { ($0[0] as? NSNumber)?.intValue == 0 }.map { row in
            var facts = row[9] as? [String: Any] ?? [:]
            if (row[9] as? NSNumber)?.intValue == 1, !(row[9] is [String: Any]) {
                facts = ["line": line + 1, "file": file]
            }
            if let next = facts["line"] as? Int {
                line = next
                file = facts["file"] ?? NSNull()
            }
            return facts
        }
    }

    /// The source's facts: kind, path, bytes, lines, detail.
    public var source: [String: Any] {
        data["source"] as? [String: Any] ?? [:]
    }
}
