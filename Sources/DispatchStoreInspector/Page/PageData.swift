import DispatchStore
import DispatchStoreJournal
import Foundation

/// The data the page embeds: the rows, the stores' keyframes, the problems, the header's facts.
///
/// One JSON object, written with ``PageJSON`` (read it with `inspector.js`, which documents the same
/// layout):
///
/// ```text
/// {"format":1, "title", "generated", "source":{kind,title,path,bytes,lines,detail}, "start",
///  "kept", "dropped", "limit", "problemCount", "problems":[{kind,text,file,line,row}],
///  "stores":[{id,type,waitsFor,reflected,failure}], "files":[path], "types":[name],
///  "recorder":null|{current, entries:[[id, transactions, key]]},
///  "frames":[[store, position, tree, hidden changes]], "rows":[...], "paths":[[segment]], "keys":[name]}
/// ```
///
/// Rows, by their first element:
///
/// - `[0, id, ms, µs, mode, type, payload, steps, changes, extra]`: a transaction. `ms` is its time
///   after `start`; `µs` its duration, or -1; `mode` 0 `async`, 1 `sync`, 2 `serial`, 3
///   `mainThread`; `type` an index into `types`; `steps` `[store, sequence number or -1, status]`
///   flattened, in the order the stores applied the action (status 0 succeeded, 1 cancelled, 2
///   failed); `changes` `[store, [change]]` flattened; `extra` 0, 1 (the line after the previous
///   row's, in the same file, and nothing more), or an object with `line`, `file`,
///   `target`, `error`, `failures` (store index to error text), `notes` (store index to text),
///   `entry` (the recorder's history entry), `checks` (`[store, sequence number, 1 match / 0 differs
///   / -1 not compared, line]`) and `parts`.
/// - `[1, ms, kind, text, file, line]`: a problem (a line that could not be read).
/// - `[2, ms, kind, text, file, line, checks, changes]`: a snapshot or a checkpoint.
/// - `[3, ms, text, changes]`: states changed outside any action (a recorder's move).
///
/// A change is `[0, path, member, value]` (set a member: a key, a struct's field as -1 - its index
/// in `keys`, or an array position),
/// `[1, path, member]` (remove it), `[2, path, index, deleteCount, [values]]` (splice an array) or
/// `[3, value]` (replace the whole state); `path` indexes `paths`, the containers' paths from the
/// root. A frame `[store, position, tree, hidden]` is the store's full state after the rows before
/// `position` (0: before the first row): `hidden` lists the changes, oldest first, of rows dropped
/// after the tree was taken, to apply to it first (or is 0).
struct PageData {
    let state: InspectorState
    let recorder: (entries: [(id: Int, transactions: Int, key: String?)], current: Int)?
    let generated: Date

    var body = PageJSON()
    private var paths: [[PathSegment]] = [[]]
    private var pathIndex: [[PathSegment]: Int] = [[]: 0]
    /// The numbers of the paths met lately (0 when none), most recent in no particular slot.
    private var recentPaths = [0, 0, 0, 0, 0, 0, 0, 0]
    private var nextRecentPath = 0
    var types: [String] = []
    /// The texts of the actions written so far.
    var actionTexts = ActionTexts()
    private var typeIndex: [ObjectIdentifier: Int] = [:]
    /// The line and file of the previous replayed row, for rows that follow it.
    var lastLine: Int?
    var lastFile: Int?
    let start: Date

    init(
        state: InspectorState,
        recorder: (entries: [(id: Int, transactions: Int, key: String?)], current: Int)?,
        generated: Date
    ) {
        var state = state
        state.pruneStores()
        self.state = state
        self.recorder = recorder
        self.generated = generated
        start = state.keptRows.first?.time ?? generated
    }

    /// The JSON text.
    mutating func json() -> [UInt8] {
        let firstKept = state.firstKeptRow
        body.raw("\"frames\":[")
        var first = true
        for (index, store) in state.stores.enumerated() {
            for (number, keyframe) in store.keyframes.enumerated() {
                if !first { body.byte(",") }
                first = false
                body.byte("[")
                body.write(index)
                body.byte(",")
                body.write(max(0, keyframe.position - firstKept))
                body.byte(",")
                body.write(keyframe.tree)
                body.byte(",")
                if number == 0 && !store.hiddenChanges.isEmpty {
                    body.byte("[")
                    for (position, hidden) in store.hiddenChanges.enumerated() {
                        if position > 0 { body.byte(",") }
                        writeChanges(hidden.changes)
                    }
                    body.byte("]")
                } else {
                    body.byte("0")
                }
                body.byte("]")
            }
        }
        body.raw("],\"rows\":[")
        for (index, row) in state.keptRows.enumerated() {
            if index > 0 { body.byte(",") }
            write(row)
        }
        body.byte("]")

        var page = PageJSON()
        writeHeader(to: &page, firstKept: firstKept)
        page.raw(",\"paths\":[")
        for (index, path) in paths.enumerated() {
            if index > 0 { page.byte(",") }
            page.byte("[")
            for (position, segment) in path.enumerated() {
                if position > 0 { page.byte(",") }
                write(segment, to: &page)
            }
            page.byte("]")
        }
        page.raw("],\"keys\":")
        writeStrings(body.keyTable, to: &page)
        page.byte(",")
        page.append(body.bytes)
        page.byte("}")
        return page.bytes
    }

    // MARK: Pieces

    mutating func pathNumber(_ path: [PathSegment]) -> Int {
        // The root, or a path met lately (rows change the same containers), before a hash lookup.
        if path.isEmpty { return 0 }
        for recent in recentPaths where paths[recent] == path {
            return recent
        }
        let number = pathIndex[path] ?? addPath(path)
        recentPaths[nextRecentPath] = number
        nextRecentPath = (nextRecentPath + 1) % recentPaths.count
        return number
    }

    private mutating func addPath(_ path: [PathSegment]) -> Int {
        pathIndex[path] = paths.count
        paths.append(path)
        return paths.count - 1
    }

    mutating func typeNumber(of action: any ActionType) -> Int {
        let type = Swift.type(of: action)
        let key = ObjectIdentifier(type)
        if let number = typeIndex[key] { return number }
        typeIndex[key] = types.count
        types.append(ActionLog.typeName(of: type))
        return types.count - 1
    }

    /// The tree of an action: its JSON when it is `Encodable`, else its reflection.
    static func tree(of action: any ActionType) -> InspectedValue {
        if let encodable = action as? any Encodable, let tree = try? TreeEncoding.tree(of: encodable) {
            return tree
        }
        return Reflection.tree(of: action)
    }

    /// A path segment of the path table: a key or a field by its name, a position by its number.
    func write(_ segment: PathSegment, to writer: inout PageJSON) {
        switch segment {
        case .key(let key), .field(let key): writer.write(key)
        case .index(let index): writer.write(index)
        }
    }

    /// A changed member: a field by -1 - its index in the key table, a key by its name, a position
    /// by its number.
    mutating func writeMember(_ segment: PathSegment) {
        if case .field(let name) = segment {
            body.write(-1 - body.keyNumber(name))
        } else {
            write(segment, to: &body)
        }
    }

    mutating func writeOptional(_ value: Int?) {
        writeOptional(value, to: &body)
    }

    func writeOptional(_ value: Int?, to writer: inout PageJSON) {
        if let value { writer.write(value) } else { writer.raw("null") }
    }

    func writeOptional(_ value: String?, to writer: inout PageJSON) {
        if let value { writer.write(value) } else { writer.raw("null") }
    }

    func writeStrings(_ values: [String], to writer: inout PageJSON) {
        writer.byte("[")
        for (index, value) in values.enumerated() {
            if index > 0 { writer.byte(",") }
            writer.write(value)
        }
        writer.byte("]")
    }

    static func modeNumber(_ mode: DispatchMode) -> Int {
        switch mode {
        case .async: 0
        case .sync: 1
        case .serial: 2
        case .mainThread: 3
        }
    }

    static func isoTime(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }
}
