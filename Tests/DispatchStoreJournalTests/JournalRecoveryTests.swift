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

/// A wallet as version 1 of a program kept it: whole dollars.
struct WalletV1: VersionedState, Equatable {
    static let stateVersion = 1
    var dollars: [String: Int] = [:]
}

/// The same wallet in version 2: cents.
struct WalletV2: VersionedState, Equatable {
    static let stateVersion = 2
    var cents: [String: Int] = [:]
}

enum WalletAction: ActionType, Codable {
    case add(String, Int)
}

final class WalletV1Reducer: Reducer<WalletV1, WalletAction> {
    override func reduce(_ action: WalletAction, into state: inout WalletV1) {
        guard case .add(let account, let dollars) = action else { return }
        state.dollars[account, default: 0] += dollars
    }
}

final class WalletV2Reducer: Reducer<WalletV2, WalletAction> {
    override func reduce(_ action: WalletAction, into state: inout WalletV2) {
        guard case .add(let account, let dollars) = action else { return }
        state.cents[account, default: 0] += dollars * 100
    }
}

private func everyFile(_ directory: TemporaryDirectory) throws -> [String: Data] {
    var files: [String: Data] = [:]
    let enumerator = FileManager.default.enumerator(atPath: directory.url.path)
    while let name = enumerator?.nextObject() as? String {
        var isDirectory: ObjCBool = false
        let path = directory.url.path + "/" + name
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: path))
        }
    }
    return files
}

private func newestFile(_ directory: TemporaryDirectory, prefix: String) throws -> String {
    try #require(try fileNames(directory).filter { $0.hasPrefix(prefix) }.last.map { directory.url.path + "/" + $0 })
}

@Suite("Journal: damage, bad input and migration")
struct JournalRecoveryTests {
    @Test("a torn last record is skipped, saved aside and reported; the file is never appended to again")
    func tornTail() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, liveStores) = try journaledChains()
        var journal: Journal? = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 100)
        dispatchChain(live, 0..<30)
        crash(&journal, of: live)
        let records = try newestFile(directory, prefix: "records-")
        let torn = Data(#"{"id":99,"time":"2026-11-21T10:00:00.000Z","mode":"sync","stores":["a"],"seq":[3"#.utf8)
        let handle = try #require(FileHandle(forWritingAtPath: records))
        let offset = handle.seekToEndOfFile()
        handle.write(torn)
        handle.closeFile()

        let (fresh, freshStores) = try journaledChains()
        var recovered: Journal? = try Journal(directory: directory.url.path, dispatcher: fresh, snapshotEvery: 100)

        #expect(freshStores.map(\.state) == liveStores.map(\.state))
        #expect(recovered?.recordCount == 30)
        let problems = recovered?.recovery.problems ?? []
        let problem = try #require(problems.first)
        #expect(problems.count == 1)
        #expect(problem.code == .tornTail)
        #expect(problem.path == records)
        #expect(problem.line == 31 && problem.byteOffset == Int(offset))
        let saved = try #require(problem.recordError?.message.split(separator: " ").last.map { String($0.dropLast()) })
        #expect(try Data(contentsOf: URL(fileURLWithPath: saved)) == torn)
        #expect(try Data(contentsOf: URL(fileURLWithPath: records)).suffix(torn.count) == torn)

        dispatchChain(fresh, 30..<35)
        crash(&recovered, of: fresh)
        let (again, againStores) = try journaledChains()
        let third = try Journal(directory: directory.url.path, dispatcher: again, snapshotEvery: 100)
        #expect(third.recovery.isClean, "\(third.recovery)")
        #expect(againStores.map(\.state) == freshStores.map(\.state))
        #expect(third.recordCount == 35)
    }

    @Test("a damaged or cut latest snapshot is moved aside and the previous one used", arguments: ["flip", "cut"])
    func damagedSnapshot(damage: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, liveStores) = try journaledChains()
        var journal: Journal? = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 10)
        dispatchChain(live, 0..<25)
        crash(&journal, of: live)
        let latest = try newestFile(directory, prefix: "snapshot-")
        var bytes = try Data(contentsOf: URL(fileURLWithPath: latest))
        if damage == "flip" {
            bytes[bytes.count - 5] ^= 0x01
        } else {
            bytes = bytes.prefix(bytes.count / 2)
        }
        try bytes.write(to: URL(fileURLWithPath: latest))

        let (fresh, freshStores) = try journaledChains()
        let recovered = try Journal(directory: directory.url.path, dispatcher: fresh, snapshotEvery: 10)

        #expect(freshStores.map(\.state) == liveStores.map(\.state))
        #expect(recovered.recordCount == 25)
        #expect(recovered.recovery.snapshotGeneration == 1)
        let problem = try #require(recovered.recovery.problems.first)
        #expect(problem.code == .corruptSnapshot)
        #expect(problem.message.contains(latest))
        let quarantined = try FileManager.default.contentsOfDirectory(atPath: directory.url.path + "/quarantine")
        #expect(quarantined.count == 1)
        let moved = try Data(contentsOf: directory.url.appendingPathComponent("quarantine/" + quarantined[0]))
        #expect(moved == bytes)
    }

    @Test("records that cannot be read are reported by file and line, kept aside, and the rest recovered")
    func unreadableRecords() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, liveStores) = try journaledChains()
        var journal: Journal? = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 1_000)
        for index in 0..<6 {
            live.dispatch(ChainAction.mix(UInt64(index)), to: index < 3 ? "a" : "b", mode: .sync)
        }
        crash(&journal, of: live)
        let records = try newestFile(directory, prefix: "records-")
        var lines = try String(contentsOfFile: records, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[1] = lines[1].replacingOccurrences(of: ActionLog.typeName(of: ChainAction.self), with: "Gone.Action")
        lines[4] = "\u{1}\u{2} garbage"
        try (lines.joined(separator: "\n") + "\n").write(toFile: records, atomically: true, encoding: .utf8)

        let (fresh, freshStores) = try journaledChains()
        let recovered = try Journal(directory: directory.url.path, dispatcher: fresh, snapshotEvery: 1_000)

        let codes = recovered.recovery.problems.map(\.code)
        #expect(codes.filter { $0 == .unreadableRecord }.count == 3)
        #expect(codes.filter { $0 == .divergence }.count == 2)
        let unknownType = try #require(recovered.recovery.problems.first { $0.line == 2 })
        #expect(unknownType.message.contains("Gone.Action") && unknownType.path == records)
        #expect(recovered.recovery.problems.contains { $0.line == 5 && $0.path == records })
        #expect(recovered.recovery.problems.contains { $0.code == .divergence && $0.storeIdentifier == "a" })
        #expect(freshStores[0].sequenceNumber == 1)
        #expect(freshStores[1].sequenceNumber == 1)
        #expect(freshStores[2].state == liveStores[2].state)
        let copies = try FileManager.default.contentsOfDirectory(atPath: directory.url.path + "/quarantine")
        #expect(copies.count == 1)
    }

    @Test("a journal or snapshot of a newer format, and a newer state version, are refused and nothing changes")
    func newerFormats() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let dispatcher = Dispatcher()
        try dispatcher.register(store: Store<WalletV2, WalletAction>(identifier: "wallet", reducer: WalletV2Reducer()))
        let journal = try Journal(directory: directory.url.path, dispatcher: dispatcher)
        dispatcher.dispatch(WalletAction.add("alice", 3), mode: .sync)
        try journal.close()
        let before = try everyFile(directory)

        let older = Dispatcher()
        try older.register(store: Store<WalletV1, WalletAction>(identifier: "wallet", reducer: WalletV1Reducer()))
        #expect {
            try Journal(directory: directory.url.path, dispatcher: older)
        } throws: { error in
            guard let error = error as? JournalError else { return false }
            return error.code == .newerStateVersion && error.storeIdentifier == "wallet"
                && error.message.contains("version 2") && error.message.contains("nothing was changed")
        }
        #expect(try everyFile(directory) == before)

        let snapshot = try newestFile(directory, prefix: "snapshot-")
        let text = try String(contentsOfFile: snapshot, encoding: .utf8)
        try text.replacingOccurrences(of: #""version":1,"generation""#, with: #""version":2,"generation""#)
            .write(toFile: snapshot, atomically: true, encoding: .utf8)
        let later = Dispatcher()
        try later.register(store: Store<WalletV2, WalletAction>(identifier: "wallet", reducer: WalletV2Reducer()))
        #expect {
            try Journal(directory: directory.url.path, dispatcher: later)
        } throws: { error in
            (error as? JournalError)?.code == .newerFormat && "\(error)".contains(snapshot)
        }

        let manifest = directory.url.appendingPathComponent("journal.json")
        try Data(#"{"format":"DispatchStore journal","version":7}"#.utf8).write(to: manifest)
        let newer = Dispatcher()
        try newer.register(store: Store<WalletV2, WalletAction>(identifier: "wallet", reducer: WalletV2Reducer()))
        #expect {
            try Journal(directory: directory.url.path, dispatcher: newer)
        } throws: { error in
            (error as? JournalError)?.code == .newerFormat && "\(error)".contains(manifest.path)
        }
    }

    @Test("an older state version is migrated, and the records after the snapshot replayed onto it")
    func migration() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let old = Dispatcher()
        try old.register(store: Store<WalletV1, WalletAction>(identifier: "wallet", reducer: WalletV1Reducer()))
        var journal: Journal? = try Journal(directory: directory.url.path, dispatcher: old, snapshotEvery: 2)
        for amount in 1...3 {
            old.dispatch(WalletAction.add("alice", amount), mode: .sync)
        }
        crash(&journal, of: old)
        let before = try everyFile(directory)

        let unmigrated = Dispatcher()
        try unmigrated.register(store: Store<WalletV2, WalletAction>(identifier: "wallet", reducer: WalletV2Reducer()))
        #expect {
            try Journal(directory: directory.url.path, dispatcher: unmigrated)
        } throws: { error in
            (error as? JournalError)?.code == .missingMigration && "\(error)".contains("StateMigration")
        }
        #expect(try everyFile(directory) == before)

        let current = Dispatcher()
        let wallet = Store<WalletV2, WalletAction>(identifier: "wallet", reducer: WalletV2Reducer())
        try current.register(store: wallet)
        let versions = Shared<[Int]>([])
        let migration = StateMigration(WalletV2.self) { version, data in
            versions.append(version)
            let old = try JSONDecoder().decode(WalletV1.self, from: data)
            return WalletV2(cents: old.dollars.mapValues { $0 * 100 })
        }
        let migrated = try Journal(directory: directory.url.path, dispatcher: current, migrations: [migration])
        #expect(versions.current == [1])
        #expect(migrated.recovery.replayedRecordCount == 1)
        #expect(wallet.state.cents == ["alice": 600])
    }

    @Test("misuse and unusable directories are errors naming the directory or the store")
    func misuse() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try Data("hello".utf8).write(to: directory.file("notes.txt"))
        let (first, _) = try journaledChains()
        #expect {
            try Journal(directory: directory.url.path, dispatcher: first)
        } throws: { error in
            (error as? JournalError)?.code == .notAJournal && "\(error)".contains(directory.url.path)
        }

        let file = directory.file("notes.txt").path
        #expect {
            try Journal(directory: file + "/journal", dispatcher: first)
        } throws: { error in
            (error as? JournalError)?.code == .unwritableDirectory && "\(error)".contains(file)
        }

        let empty = directory.file("journal").path
        let plain = Dispatcher()
        try plain.register(store: makeCounterStore("counter"))
        #expect {
            try Journal(directory: empty, dispatcher: plain)
        } throws: { error in
            guard let error = error as? JournalError else { return false }
            return error.code == .notCodable && error.storeIdentifier == "counter" && error.message.contains("Codable")
        }

        let (busy, _) = try journaledChains()
        dispatchChain(busy, 0..<1)
        #expect {
            try Journal(directory: empty, dispatcher: busy)
        } throws: { error in
            (error as? JournalError)?.code == .storeNotFresh
        }
    }

    @Test("a failed write stops the journal: the program hears of it, later records are refused, close throws")
    func failedWriteStops() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (live, _) = try journaledChains()
        let errors = Shared<[JournalError]>([])
        let journal = try Journal(directory: directory.url.path, dispatcher: live, snapshotEvery: 5) {
            errors.append($0)
        }
        // The next generation's records go to a device that is always full.
        let next = directory.url.appendingPathComponent("records-00000000000000000001.jsonl").path
        try FileManager.default.createSymbolicLink(atPath: next, withDestinationPath: "/dev/full")
        defer { unlink(next) }
        dispatchChain(live, 0..<8)

        #expect(journal.recordCount == 5)
        let failure = try #require(journal.firstFailure)
        #expect(failure.code == .writeFailed)
        #expect(failure.message.contains(next))
        #expect(errors.current.map(\.code) == [.writeFailed, .closed])
        #expect(throws: JournalError.self) { try journal.close() }
    }
}
