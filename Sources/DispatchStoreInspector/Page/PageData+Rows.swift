import DispatchStore
import Foundation

extension PageData {
    /// Writes one row of the timeline (see the layout in ``PageData``).
    mutating func write(_ row: TimelineRow) {
        let milliseconds = Int64(((row.time.timeIntervalSince(start)) * 1_000).rounded())
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

    mutating func write(_ record: TransactionRecord, milliseconds: Int64, changes: [StoreChanges]) {
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
        writeAction(record.action)
        body.raw(",[")
        var failures: [(Int, String)] = []
        for (index, step) in record.steps.enumerated() {
            if index > 0 { body.byte(",") }
            body.write(step.store)
            body.byte(",")
            if let number = step.sequenceNumber { body.write(number) } else { body.raw("-1") }
            body.byte(",")
            switch step.status {
            case .succeeded: body.byte("0")
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

    /// An action's tree, or the text written for an equal action before (``ActionTexts``).
    mutating func writeAction(_ action: any ActionType) {
        let key = ActionTexts.key(of: action)
        if let key, let text = actionTexts.text(for: key) {
            body.append(text)
            return
        }
        let start = body.bytes.count
        body.write(Self.tree(of: action))
        if let key { actionTexts.keep(Array(body.bytes[start...]), for: key) }
    }

    mutating func writeExtra(_ record: TransactionRecord, failures: [(Int, String)], notes: [(Int, String)]) {
        // The next line of the same file, with nothing else to say: 1.
        let follows = record.line != nil && record.line == lastLine.map { $0 + 1 } && record.file == lastFile
        lastLine = record.line
        lastFile = record.file
        if follows, record.target == nil, record.error == nil, failures.isEmpty, notes.isEmpty,
            record.historyEntry == nil, record.checks.isEmpty, record.parts == 1
        {
            body.byte("1")
            return
        }
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

    mutating func writeChecks(_ checks: [CheckResult]) {
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

    mutating func writeStoreChanges(_ changes: [StoreChanges]) {
        body.byte("[")
        for (index, change) in changes.enumerated() {
            if index > 0 { body.byte(",") }
            body.write(change.store)
            body.byte(",")
            writeChanges(change.changes)
        }
        body.byte("]")
    }

    mutating func writeChanges(_ changes: [TreeChange]) {
        body.byte("[")
        for (index, change) in changes.enumerated() {
            if index > 0 { body.byte(",") }
            switch change {
            case .set(let container, let member, let value):
                body.raw("[0,")
                body.write(pathNumber(container))
                body.byte(",")
                writeMember(member)
                body.byte(",")
                body.write(value)
            case .remove(let container, let member):
                body.raw("[1,")
                body.write(pathNumber(container))
                body.byte(",")
                writeMember(member)
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

}
