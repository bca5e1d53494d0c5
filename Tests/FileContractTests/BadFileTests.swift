import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Every public entry point that takes a path, library and demos, against every way a file can be
// wrong (issue 26): each gets an error or a notice naming the path and the problem, never a hang (a
// watchdog bounds each call) or a crash. The table below is the contract, and Docs/LinuxServices.md
// states it in words; dispatch-bench's F1 times the answers (each within a second).

/// Each way a file can be wrong.
enum BadFile: String, CaseIterable, Sendable {
    case missing
    case missingParent
    case directory
    case fileForDirectory
    case symlinkLoop
    case empty
    case nulBytes
    /// A sparse file of 1 GiB whose one line has no newline.
    case hugeLine
    case devZero
    case devFull
    case truncatedWhileRead
}

/// Every public entry point that takes a path.
enum EntryPoint: String, CaseIterable, Sendable {
    case read = "ActionLog.read"
    case forEachEntry = "ActionLog.forEachEntry"
    case replay = "ActionLog.replay"
    case logMiddleware = "ActionLogMiddleware"
    case journalDirectory = "Journal(directory:)"
    case journalRecords = "Journal recovery, a records file"
    case journalSnapshot = "Journal recovery, a snapshot"
    case journalManifest = "Journal recovery, journal.json"
    case todoFile = "todo --file"
    case inventoryReplay = "inventory --replay"
    case inventoryLog = "inventory --log"
    case inventoryData = "inventory --data"
}

/// What an entry point must do with a bad file.
enum Verdict: Sendable {
    /// Refuse: throw an error with this code (`exit 1` for a demo), whose message names the path and
    /// holds `problem`.
    case refused(code: String, problem: String)
    /// Go on, with a notice holding `problem` (naming the path, where it is a message).
    case notice(String)
    /// Go on: nothing is wrong for this entry point.
    case works
    /// The case does not arise for this entry point, for the reason given.
    case notApplicable(String)
}

extension EntryPoint {
    /// The contract.
    func verdict(_ bad: BadFile) -> Verdict {
        switch (self, bad) {
        // Readers: a path they cannot open, or a line past the limit, is an error; an empty log is
        // empty; a file of NULs without a newline is a torn last line, skipped and reported.
        case (.read, _), (.forEachEntry, _), (.replay, _), (.inventoryReplay, _):
            let code = self == .inventoryReplay ? "exit 1" : "unreadableFile"
            switch bad {
            case .missing: return .refused(code: code, problem: "No such file or directory")
            case .missingParent: return .refused(code: code, problem: "does not exist")
            case .directory: return .refused(code: code, problem: "it is a directory")
            case .fileForDirectory: return .refused(code: code, problem: "Not a directory")
            case .symlinkLoop: return .refused(code: code, problem: "symbolic link loop")
            case .empty: return self == .inventoryReplay ? .notice("holds no events") : .works
            case .nulBytes: return .notice("truncated line 1 (4096 bytes from byte 0)")
            case .hugeLine, .devZero, .devFull: return .refused(code: code, problem: "longer than 64 MiB")
            case .truncatedWhileRead:
                guard self != .read else {
                    return .notApplicable("read has no callback to cut the file from; forEachEntry reads alike")
                }
                return .refused(code: code, problem: "cut short while it was read")
            }
        // Writers: a missing file is created; a path that cannot be one is an error; a file that is
        // not a log a crash left (more than a line without a newline) is left as it was.
        case (.logMiddleware, _), (.inventoryLog, _):
            let program = self == .inventoryLog
            switch bad {
            case .missing, .empty: return .works
            case .missingParent:
                return .refused(code: program ? "exit 1" : "unwritableFile", problem: "does not exist")
            case .directory: return .refused(code: program ? "exit 1" : "unwritableFile", problem: "it is a directory")
            case .fileForDirectory:
                return .refused(code: program ? "exit 1" : "unwritableFile", problem: "Not a directory")
            case .symlinkLoop:
                return .refused(code: program ? "exit 1" : "unwritableFile", problem: "symbolic link loop")
            case .nulBytes: return .notice("cut short by a crash")
            case .hugeLine:
                return .refused(code: program ? "exit 1" : "malformedLine", problem: "64 MiB without a newline")
            case .devZero: return .works  // a character device takes what is written, unread and unlocked
            case .devFull:
                return .refused(code: program ? "exit 1" : "unwritableFile", problem: "No space left on device")
            case .truncatedWhileRead:
                return .notApplicable("opening reads only the tail, holding the log's lock; see the rotation tests")
            }
        // Journal directories: created when missing; anything but a directory is refused.
        case (.journalDirectory, _), (.inventoryData, _):
            let program = self == .inventoryData
            switch bad {
            case .missing, .missingParent, .empty: return .works
            case .directory: return .notApplicable("a directory is what it takes; files inside are the next rows")
            case .fileForDirectory, .nulBytes, .hugeLine:
                return .refused(code: program ? "exit 1" : "notAJournal", problem: "is a regular file")
            case .symlinkLoop:
                return .refused(code: program ? "exit 1" : "unwritableDirectory", problem: "symbolic link loop")
            case .devZero, .devFull:
                return .refused(code: program ? "exit 1" : "notAJournal", problem: "is a character device")
            case .truncatedWhileRead: return .notApplicable("a directory is not read; its records file is")
            }
        // A records file: refused when it cannot be read to its end, a torn tail skipped and reported.
        case (.journalRecords, _):
            switch bad {
            case .missing, .empty: return .works
            case .missingParent, .fileForDirectory: return .notApplicable("the journal names its files itself")
            case .directory: return .refused(code: "unreadableFile", problem: "it is a directory")
            case .symlinkLoop: return .refused(code: "unreadableFile", problem: "symbolic link loop")
            case .nulBytes: return .notice("cut short by a crash")
            case .hugeLine, .devZero, .devFull: return .refused(code: "unreadableFile", problem: "longer than 64 MiB")
            case .truncatedWhileRead: return .refused(code: "unreadableFile", problem: "cut short while it was read")
            }
        // A snapshot: anything but a whole one is moved aside, and the records before it replayed.
        case (.journalSnapshot, _):
            switch bad {
            case .missing: return .works
            case .missingParent, .fileForDirectory: return .notApplicable("the journal names its files itself")
            case .directory: return .notice("is a directory, not a file the journal wrote")
            case .symlinkLoop: return .notice("symbolic link loop")
            case .empty: return .notice("no complete header line")
            case .nulBytes: return .notice("no complete header line")
            case .hugeLine: return .notice("longer than 64 MiB")
            case .devZero, .devFull: return .notice("is a character device, not a file the journal wrote")
            case .truncatedWhileRead:
                return .notApplicable("a snapshot's header holds its size and digest: one cut short is damaged")
            }
        // The manifest: the journal refuses to open, changing nothing.
        case (.journalManifest, _):
            switch bad {
            case .missing: return .refused(code: "notAJournal", problem: "no journal.json")
            case .missingParent, .fileForDirectory: return .notApplicable("the journal names its files itself")
            case .directory: return .refused(code: "notAJournal", problem: "is a directory")
            case .symlinkLoop: return .refused(code: "unreadableFile", problem: "symbolic link loop")
            case .empty, .nulBytes, .hugeLine: return .refused(code: "notAJournal", problem: "not the manifest")
            case .devZero, .devFull: return .refused(code: "notAJournal", problem: "is a character device")
            case .truncatedWhileRead: return .notApplicable("one short line, read in one call")
            }
        // The todo list: a missing file is an empty list; one that cannot be saved yet is a notice;
        // anything that is not a todo file is refused, left as it is.
        case (.todoFile, _):
            switch bad {
            case .missing, .missingParent: return .works
            case .directory: return .refused(code: "exit 1", problem: "it is a directory")
            case .fileForDirectory: return .notice("is a file, not a directory")
            case .symlinkLoop: return .refused(code: "exit 1", problem: "symbolic link loop")
            case .empty: return .refused(code: "exit 1", problem: "it is empty")
            case .nulBytes: return .refused(code: "exit 1", problem: "not a valid todo file")
            case .hugeLine: return .refused(code: "exit 1", problem: "more than the 16 MiB")
            case .devZero, .devFull: return .refused(code: "exit 1", problem: "not a regular file")
            case .truncatedWhileRead:
                return .notApplicable("read in one call after stat; a size that changed meanwhile is refused")
            }
        }
    }
}

/// One cell of the table: an entry point and a bad file.
struct Cell: Sendable, CustomTestStringConvertible {
    let entry: EntryPoint
    let bad: BadFile

    var testDescription: String {
        "\(entry.rawValue) with \(bad.rawValue)"
    }

    /// Every cell the contract applies to.
    static let applicable: [Cell] = EntryPoint.allCases.flatMap { entry in
        BadFile.allCases.compactMap { bad in
            if case .notApplicable = entry.verdict(bad) { return nil }
            return Cell(entry: entry, bad: bad)
        }
    }
}

/// What an entry point did.
enum Outcome: Sendable, CustomStringConvertible {
    /// An error with this code (`exit N` for a program), and its message (a program's standard error).
    case refused(code: String, message: String)
    /// It went on, with this notice.
    case notice(String)
    /// It went on.
    case works(String)

    var description: String {
        switch self {
        case .refused(let code, let message): "refused (\(code)): \(message)"
        case .notice(let text): "notice: \(text)"
        case .works(let text): "works: \(text)"
        }
    }
}

/// How long a call may take before the watchdog calls it a hang.
let hangBound = 60.0

/// Runs `call` under the watchdog and returns what it threw, or `nil` when it returned.
///
/// - Throws: When `call` still ran after ``hangBound`` seconds.
func thrownError(_ name: String, _ call: @escaping @Sendable () throws -> Void) throws -> (any Error)? {
    let watched = runWatched(seconds: hangBound) { Result { try call() } }
    let outcome = try #require(watched, "\(name) still ran after \(hangBound) s")
    if case .failure(let error) = outcome.result { return error }
    return nil
}

@Suite("Bad files: every entry point that takes a path")
struct BadFileTests {
    @Test("every entry point has a verdict or a reason for every bad file")
    func tableIsComplete() {
        for entry in EntryPoint.allCases {
            for bad in BadFile.allCases {
                if case .notApplicable(let reason) = entry.verdict(bad) {
                    #expect(!reason.isEmpty, "\(entry.rawValue) with \(bad.rawValue)")
                }
            }
        }
        #expect(Cell.applicable.count > 100)
    }

    // How fast the answers come is dispatch-bench's F1 (a timed test would fail on a busy machine);
    // here a call that does not return within the watchdog's bound is a hang.
    @Test("an error or a notice naming the path and the problem, never a hang", arguments: Cell.applicable)
    func badFile(_ cell: Cell) throws {
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let prepared = try cell.prepare(in: scratch)
        let watched = try #require(
            runWatched(seconds: hangBound) { prepared.call() },
            "\(cell.testDescription) still ran after \(hangBound) s"
        )
        let outcome = watched.result
        switch (cell.entry.verdict(cell.bad), outcome) {
        case (.refused(let code, let problem), .refused(let actualCode, let message)):
            #expect(actualCode == code, "\(outcome)")
            #expect(message.contains(prepared.path), "the message does not name \(prepared.path): \(message)")
            #expect(message.contains(problem), "the message does not say \"\(problem)\": \(message)")
        case (.notice(let problem), .notice(let text)):
            #expect(text.contains(problem), "the notice does not say \"\(problem)\": \(text)")
            if prepared.noticeNamesPath {
                #expect(text.contains(prepared.path), "the notice does not name \(prepared.path): \(text)")
            }
        case (.works, .works):
            break
        case (let verdict, _):
            Issue.record("expected \(verdict), got \(outcome)")
        }
    }
}

// MARK: - Preparing and running a cell

/// A cell ready to run: the path its messages must name, and the call.
struct Prepared: Sendable {
    let path: String
    /// Whether a notice is a message naming the path (not a value the caller has the path of).
    var noticeNamesPath = true
    let call: @Sendable () -> Outcome
}

extension Cell {
    func prepare(in scratch: TemporaryDirectory) throws -> Prepared {
        switch entry {
        case .read, .forEachEntry, .replay: return try prepareReader(in: scratch)
        case .logMiddleware: return try prepareMiddleware(in: scratch)
        case .journalDirectory: return try prepareJournalDirectory(in: scratch)
        case .journalRecords, .journalSnapshot, .journalManifest: return try prepareJournalFile(in: scratch)
        case .todoFile, .inventoryReplay, .inventoryLog, .inventoryData: return try prepareProgram(in: scratch)
        }
    }

    private func prepareReader(in scratch: TemporaryDirectory) throws -> Prepared {
        let path = try makeFile(bad, in: scratch)
        let types: [any (ActionType & Decodable).Type] = [NoteAction.self]
        let truncate: @Sendable () -> Void = { cut(path) }
        switch entry {
        case .read:
            return Prepared(path: path, noticeNamesPath: false) {
                outcome {
                    let contents = try ActionLog.read(contentsOf: path, actionTypes: types)
                    return contents.tornTail.map { "truncated \($0)" }.map(Outcome.notice)
                        ?? .works("\(contents.entries.count) entries")
                }
            }
        case .forEachEntry:
            return Prepared(path: path, noticeNamesPath: false) {
                outcome {
                    let summary = try ActionLog.forEachEntry(in: path, actionTypes: types) { entry in
                        if bad == .truncatedWhileRead && entry.line == 1 { truncate() }
                    }
                    return summary.tornTail.map { "truncated \($0)" }.map(Outcome.notice)
                        ?? .works("\(summary.entryCount) entries")
                }
            }
        default:
            return Prepared(path: path, noticeNamesPath: false) {
                outcome {
                    let dispatcher = try notesDispatcher(onFirstNote: bad == .truncatedWhileRead ? truncate : nil)
                    let report = try ActionLog.replay(contentsOf: path, into: dispatcher, actionTypes: types)
                    return report.tornTail == nil ? .works("\(report)") : .notice("\(report)")
                }
            }
        }
    }

    private func prepareMiddleware(in scratch: TemporaryDirectory) throws -> Prepared {
        let path = try makeFile(bad, in: scratch)
        return Prepared(path: path) {
            outcome {
                let errors = Shared<[ActionLogError]>([])
                let log = try ActionLogMiddleware(path: path) { errors.append($0) }
                let dispatcher = try notesDispatcher()
                dispatcher.register(middleware: log)
                dispatcher.dispatch(NoteAction.add("milk"), mode: .sync)
                log.close()
                if let failure = errors.current.first(where: { $0.code != .tornTail }) { throw failure }
                if let torn = errors.current.first { return .notice(torn.message) }
                return .works("\(log.writtenCount) lines written")
            }
        }
    }

    private func prepareJournalDirectory(in scratch: TemporaryDirectory) throws -> Prepared {
        let path = try makeDirectory(bad, in: scratch)
        return Prepared(path: path) {
            outcome {
                let journal = try Journal(directory: path, dispatcher: notesDispatcher())
                try journal.close()
                return .works(journal.recovery.description)
            }
        }
    }

    /// A journal left as a crash leaves it, with the bad file in the place of one of its files.
    private func prepareJournalFile(in scratch: TemporaryDirectory) throws -> Prepared {
        let directory = scratch.file("journal").path
        let target: String
        switch entry {
        case .journalRecords where bad == .truncatedWhileRead:
            // Long enough that reading cannot reach its end before the first record is applied.
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            try Data(#"{"format":"DispatchStore journal","version":1}"#.utf8 + [0x0A])
                .write(to: URL(fileURLWithPath: directory + "/journal.json"))
            target = directory + "/records-00000000000000000000.jsonl"
            try noteLines(40_000).write(to: URL(fileURLWithPath: target))
        case .journalRecords:
            try crashedJournal(directory, snapshotAfter: nil)
            target = directory + "/records-00000000000000000000.jsonl"
        case .journalSnapshot:
            try crashedJournal(directory, snapshotAfter: 3)
            target = directory + "/snapshot-00000000000000000001.json"
        default:
            try crashedJournal(directory, snapshotAfter: nil)
            target = directory + "/journal.json"
        }
        if bad != .truncatedWhileRead { try make(bad, at: target) }
        let expected = bad == .truncatedWhileRead || entry == .journalRecords ? nil : 5
        let truncate: @Sendable () -> Void = { cut(target) }
        return Prepared(path: target) {
            outcome {
                let dispatcher = try notesDispatcher(onFirstNote: bad == .truncatedWhileRead ? truncate : nil)
                let journal = try Journal(directory: directory, dispatcher: dispatcher)
                let count = (dispatcher.store(with: "notes") as? Store<Notes, NoteAction>)?.state.items.count
                try journal.close()
                if let expected, count != expected {
                    return .refused(code: "lost records", message: "\(count ?? -1) of \(expected) notes recovered")
                }
                let problems = journal.recovery.problems.map(\.message)
                return problems.isEmpty ? .works("\(journal.recovery)") : .notice(problems.joined(separator: " "))
            }
        }
    }

    private func prepareProgram(in scratch: TemporaryDirectory) throws -> Prepared {
        let event = Data(#"{"event":"restock","item":"apple","quantity":3}"#.utf8 + [0x0A])
        let program: String
        let arguments: [String]
        var input = Data()
        let path: String
        switch entry {
        case .todoFile:
            path = try makeFile(bad, in: scratch)
            (program, arguments, input) = ("todo", ["--file", path], Data("list\n".utf8))
        case .inventoryReplay where bad == .truncatedWhileRead:
            path = scratch.file("actions.jsonl").path
            try inventoryLines(60_000).write(to: URL(fileURLWithPath: path))
            return Prepared(path: path) { replayCutShort(path) }
        case .inventoryReplay:
            path = try makeFile(bad, in: scratch)
            (program, arguments) = ("inventory", ["--replay", path])
        case .inventoryLog:
            path = try makeFile(bad, in: scratch)
            (program, arguments, input) = ("inventory", ["--log", path], event)
        default:
            path = try makeDirectory(bad, in: scratch)
            (program, arguments, input) = ("inventory", ["--data", path], event)
        }
        let given = input
        return Prepared(path: path) {
            do {
                return outcome(of: try Executables.run(program, arguments, input: given, timeout: hangBound))
            } catch {
                return .refused(code: "not run", message: "\(error)")
            }
        }
    }
}

/// The outcome of a library call: what it returned, or the code and message of what it threw.
func outcome(_ body: () throws -> Outcome) -> Outcome {
    do {
        return try body()
    } catch let error as ActionLogError {
        return .refused(code: error.code.description, message: error.message)
    } catch let error as JournalError {
        return .refused(code: error.code.description, message: error.message)
    } catch {
        return .refused(code: "\(type(of: error))", message: "\(error)")
    }
}

/// The outcome of a program's run: exit 0 works (with a notice, if it wrote one), anything else
/// is refused.
func outcome(of output: Executables.Output) -> Outcome {
    guard output.status == 0 else {
        return .refused(code: output.timedOut ? "timed out" : "exit \(output.status)", message: output.standardError)
    }
    let notices = output.standardError.split(separator: "\n").filter { $0.contains(": notice: ") }
    return notices.isEmpty ? .works(output.standardError) : .notice(notices.joined(separator: "\n"))
}

/// Truncates the file at `path` to nothing, as another program might while it is read.
func cut(_ path: String) {
    _ = truncate(path, 0)
}

/// `inventory --replay --verbose` of a long log, cut short once the first event is replayed.
func replayCutShort(_ path: String) -> Outcome {
    do {
        let program = try RunningProgram("inventory", ["--replay", path, "--verbose"])
        while let line = program.nextErrorLine(seconds: hangBound), !line.contains("Replayed event") {}
        cut(path)
        return outcome(of: program.wait(seconds: hangBound))
    } catch {
        return .refused(code: "not run", message: "\(error)")
    }
}

// MARK: - Making bad files

/// The bad file, at a path in `scratch` where a file is expected.
func makeFile(_ bad: BadFile, in scratch: TemporaryDirectory) throws -> String {
    switch bad {
    case .missingParent:
        return scratch.file("no-such-directory/actions.jsonl").path
    case .fileForDirectory:
        try Data("a file".utf8).write(to: scratch.file("a-file"))
        return scratch.file("a-file/actions.jsonl").path
    case .devZero:
        return "/dev/zero"
    case .devFull:
        return "/dev/full"
    case .truncatedWhileRead:
        let path = scratch.file("actions.jsonl").path
        try noteLines(40_000).write(to: URL(fileURLWithPath: path))
        return path
    default:
        let path = scratch.file(bad == .symlinkLoop ? "loop" : "actions.jsonl").path
        try make(bad, at: path)
        return path
    }
}

/// The bad file, at a path in `scratch` where a directory is expected.
func makeDirectory(_ bad: BadFile, in scratch: TemporaryDirectory) throws -> String {
    switch bad {
    case .missing:
        return scratch.file("data").path
    case .missingParent:
        return scratch.file("no-such-directory/data").path
    case .empty:
        let path = scratch.file("data").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    case .fileForDirectory:
        let path = scratch.file("data").path
        try Data("a file".utf8).write(to: URL(fileURLWithPath: path))
        return path
    default:
        return try makeFile(bad, in: scratch)
    }
}

/// Puts the bad file at `path`, in the place of what is there: a device goes in as a link to it.
func make(_ bad: BadFile, at path: String) throws {
    let manager = FileManager.default
    if (try? manager.destinationOfSymbolicLink(atPath: path)) != nil || manager.fileExists(atPath: path) {
        try manager.removeItem(atPath: path)
    }
    switch bad {
    case .missing:
        break
    case .directory:
        try manager.createDirectory(atPath: path, withIntermediateDirectories: false)
    case .symlinkLoop:
        try manager.createSymbolicLink(atPath: path, withDestinationPath: (path as NSString).lastPathComponent)
    case .empty:
        #expect(manager.createFile(atPath: path, contents: Data()))
    case .nulBytes:
        #expect(manager.createFile(atPath: path, contents: Data(count: 4_096)))
    case .hugeLine:
        // One line of 1 GiB with no newline, stored sparsely: a few bytes and a hole.
        #expect(manager.createFile(atPath: path, contents: Data(#"{"id":1,"payload":""#.utf8)))
        #expect(truncate(path, 1 << 30) == 0)
    case .devZero:
        try manager.createSymbolicLink(atPath: path, withDestinationPath: "/dev/zero")
    case .devFull:
        try manager.createSymbolicLink(atPath: path, withDestinationPath: "/dev/full")
    case .missingParent, .fileForDirectory, .truncatedWhileRead:
        Issue.record("\(bad) is made by the caller")
    }
}

/// A journal in `directory` with five notes, left as a crash leaves it; with a snapshot after
/// `snapshotAfter` of them, if given.
func crashedJournal(_ directory: String, snapshotAfter: Int?) throws {
    let dispatcher = try notesDispatcher()
    var journal: Journal? = try Journal(directory: directory, dispatcher: dispatcher, snapshotEvery: 1_000)
    for index in 1...5 {
        dispatcher.dispatch(NoteAction.add("note \(index)"), mode: .sync)
        if index == snapshotAfter { try journal?.snapshot() }
    }
    dispatcher.unregister(middleware: journal!)
    #expect(isKnownUniquelyReferenced(&journal))
    journal = nil
}

/// `count` log lines of notes, each store number in order.
func noteLines(_ count: Int) -> Data {
    let type = ActionLog.typeName(of: NoteAction.self)
    var text = ""
    text.reserveCapacity(count * 160)
    for number in 1...count {
        text += #"{"id":\#(number),"time":"2026-11-21T10:15:30.125Z","mode":"sync","stores":["notes"],"#
        text += #""seq":[\#(number)],"type":"\#(type)","payload":{"add":{"_0":"note \#(number)"}}}"# + "\n"
    }
    return Data(text.utf8)
}

/// `count` lines of an inventory action log: restocks, each store number in order.
func inventoryLines(_ count: Int) -> Data {
    var text = ""
    text.reserveCapacity(count * 200)
    for number in 1...count {
        text += #"{"id":\#(number),"time":"2026-11-21T10:15:30.125Z","mode":"serial","#
        text += #""stores":["stock","orders","audit"],"seq":[\#(number),\#(number),\#(number)],"#
        text += #""type":"InventoryCore.InventoryAction","payload":{"restock":{"item":"apple","quantity":1}}}"# + "\n"
    }
    return Data(text.utf8)
}
