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
///   flattened, in the order the stores applied the action (status 0 finished, 1 cancelled, 2
///   failed); `changes` `[store, [change]]` flattened; `extra` 0 or an object with `line`, `file`,
///   `target`, `error`, `failures` (store index to error text), `notes` (store index to text),
///   `entry` (the recorder's history entry), `checks` (`[store, sequence number, 1 match / 0 differs
///   / -1 not compared, line]`) and `parts`.
/// - `[1, ms, kind, text, file, line]`: a problem (a line that could not be read).
/// - `[2, ms, kind, text, file, line, checks, changes]`: a snapshot or a checkpoint.
/// - `[3, ms, text, changes]`: states changed outside any action (a recorder's move).
///
/// A change is `[0, path, member, value]` (set a member: a key, or an array position),
/// `[1, path, member]` (remove it), `[2, path, index, deleteCount, [values]]` (splice an array) or
/// `[3, value]` (replace the whole state); `path` indexes `paths`, the containers' paths from the
/// root. A frame `[store, position, tree, hidden]` is the store's full state after the rows before
/// `position` (0: before the first row): `hidden` lists the changes, oldest first, of rows dropped
/// after the tree was taken, to apply to it first (or is 0).
struct PageData {
    let state: InspectorState
    let recorder: (entries: [(id: Int, transactions: Int, key: String?)], current: Int)?
    let generated: Date

    private var body = PageJSON()
    private var paths: [[PathSegment]] = [[]]
    private var pathIndex: [[PathSegment]: Int] = [[]: 0]
    var types: [String] = []
    private var typeIndex: [ObjectIdentifier: Int] = [:]
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

    // MARK: Rows

    private mutating func write(_ row: TimelineRow) {
        let milliseconds = ((row.time.timeIntervalSince(start)) * 1_000).rounded()
        switch row.content {
        case .transaction(let record):
            write(record, milliseconds: milliseconds, changes: row.changes)
        case .problem(let problem):
            body.raw("[1,")
            body.write(milliseconds)
            body.byte(",")
            body.write(problem.kind)
            body.byte(",")
            body.write(problem.message)
            body.byte(",")
            writeOptional(problem.file)
            body.byte(",")
            writeOptional(problem.line)
            body.byte("]")
        case .marker(let marker):
            body.raw("[2,")
            body.write(milliseconds)
            body.byte(",")
            body.write(marker.kind)
            body.byte(",")
            body.write(marker.text)
            body.byte(",")
            writeOptional(marker.file)
            body.byte(",")
            writeOptional(marker.line)
            body.byte(",")
            writeChecks(marker.checks)
            body.byte(",")
            writeStoreChanges(row.changes)
            body.byte("]")
        case .restore(let text):
            body.raw("[3,")
            body.write(milliseconds)
            body.byte(",")
            body.write(text)
            body.byte(",")
            writeStoreChanges(row.changes)
            body.byte("]")
        }
    }

    private mutating func write(_ record: TransactionRecord, milliseconds: Double, changes: [StoreChanges]) {
        body.raw("[0,")
        body.write(record.id)
        body.byte(",")
        body.write(milliseconds)
        body.byte(",")
        if let duration = record.duration {
            let (seconds, attoseconds) = duration.components
            body.write(seconds * 1_000_000 + attoseconds / 1_000_000_000_000)
        } else {
            body.raw("-1")
        }
        body.byte(",")
        body.write(Self.modeNumber(record.mode))
        body.byte(",")
        body.write(typeNumber(of: record.action))
        body.byte(",")
        body.write(Self.tree(of: record.action))
        body.raw(",[")
        var failures: [(Int, String)] = []
        for (index, step) in record.steps.enumerated() {
            if index > 0 { body.byte(",") }
            body.write(step.store)
            body.byte(",")
            if let number = step.sequenceNumber { body.write(number) } else { body.raw("-1") }
            body.byte(",")
            switch step.status {
            case .finished: body.byte("0")
            case .cancelled: body.byte("1")
            case .failed(let text):
                body.byte("2")
                failures.append((step.store, text))
            }
        }
        body.raw("],")
        writeStoreChanges(changes)
        body.byte(",")
        writeExtra(
            record,
            failures: failures,
            notes: changes.compactMap { change in change.note.map { (change.store, $0) } }
        )
        body.byte("]")
    }

    private mutating func writeExtra(_ record: TransactionRecord, failures: [(Int, String)], notes: [(Int, String)]) {
        var fields = 0
        func field(_ name: StaticString) {
            body.byte(fields == 0 ? "{" : ",")
            fields += 1
            body.byte("\"")
            body.raw(name)
            body.raw("\":")
        }
        if let line = record.line {
            field("line")
            body.write(line)
        }
        if let file = record.file {
            field("file")
            body.write(file)
        }
        if let target = record.target {
            field("target")
            body.write(target)
        }
        if let error = record.error {
            field("error")
            body.write(error)
        }
        for (name, list) in [("failures", failures), ("notes", notes)] where !list.isEmpty {
            name == "failures" ? field("failures") : field("notes")
            body.byte("{")
            for (index, item) in list.enumerated() {
                if index > 0 { body.byte(",") }
                body.write(String(item.0))
                body.byte(":")
                body.write(item.1)
            }
            body.byte("}")
        }
        if let entry = record.historyEntry {
            field("entry")
            body.write(entry)
        }
        if !record.checks.isEmpty {
            field("checks")
            writeChecks(record.checks)
        }
        if record.parts > 1 {
            field("parts")
            body.write(record.parts)
        }
        if fields == 0 { body.byte("0") } else { body.byte("}") }
    }

    private mutating func writeChecks(_ checks: [CheckResult]) {
        body.byte("[")
        for (index, check) in checks.enumerated() {
            if index > 0 { body.byte(",") }
            body.byte("[")
            body.write(check.store)
            body.byte(",")
            body.write(check.sequenceNumber)
            body.byte(",")
            body.write(check.matches.map { $0 ? 1 : 0 } ?? -1)
            body.byte(",")
            body.write(check.line)
            body.byte("]")
        }
        body.byte("]")
    }

    private mutating func writeStoreChanges(_ changes: [StoreChanges]) {
        body.byte("[")
        for (index, change) in changes.enumerated() {
            if index > 0 { body.byte(",") }
            body.write(change.store)
            body.byte(",")
            writeChanges(change.changes)
        }
        body.byte("]")
    }

    private mutating func writeChanges(_ changes: [TreeChange]) {
        body.byte("[")
        for (index, change) in changes.enumerated() {
            if index > 0 { body.byte(",") }
            switch change {
            case .set(let container, let member, let value):
                body.raw("[0,")
                body.write(pathNumber(container))
                body.byte(",")
                write(member, to: &body)
                body.byte(",")
                body.write(value)
            case .remove(let container, let member):
                body.raw("[1,")
                body.write(pathNumber(container))
                body.byte(",")
                write(member, to: &body)
            case .splice(let container, let index, let deleteCount, let values):
                body.raw("[2,")
                body.write(pathNumber(container))
                body.byte(",")
                body.write(index)
                body.byte(",")
                body.write(deleteCount)
                body.raw(",[")
                for (position, value) in values.enumerated() {
                    if position > 0 { body.byte(",") }
                    body.write(value)
                }
                body.byte("]")
            case .replace(let value):
                body.raw("[3,")
                body.write(value)
            }
            body.byte("]")
        }
        body.byte("]")
    }

    // MARK: Pieces

    private mutating func pathNumber(_ path: [PathSegment]) -> Int {
        if let number = pathIndex[path] { return number }
        pathIndex[path] = paths.count
        paths.append(path)
        return paths.count - 1
    }

    private mutating func typeNumber(of action: any ActionType) -> Int {
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

    private func write(_ segment: PathSegment, to writer: inout PageJSON) {
        switch segment {
        case .key(let key): writer.write(key)
        case .index(let index): writer.write(index)
        }
    }

    private mutating func writeOptional(_ value: Int?) {
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
