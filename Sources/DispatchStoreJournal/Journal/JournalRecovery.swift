import DispatchStore
import Foundation

extension Journal {
    /// What recovery found in the directory and did with it.
    public struct Recovery: Sendable, CustomStringConvertible {
        /// The generation of the snapshot recovery started from, or `nil` when it started from the
        /// stores' initial states.
        public let snapshotGeneration: Int?
        /// How many records had been written before that snapshot.
        public let snapshotRecordCount: Int
        /// How many records after the snapshot were applied to the stores.
        public let replayedRecordCount: Int
        /// How many records the recovered history holds: the snapshot's, then those after it.
        public let recordCount: Int
        /// What recovery worked around, each naming the file and the line or store: a torn tail, a damaged snapshot, an
        /// unreadable record, a store whose records have a gap.
        ///
        /// Empty after a clean shutdown or an ordinary crash.
        public let problems: [JournalError]
        /// How long recovery took.
        public internal(set) var duration: Duration

        /// Whether recovery found nothing to work around.
        public var isClean: Bool {
            problems.isEmpty
        }

        /// A line such as `recovered 41200 records in 0.052 s: snapshot 41 (41000 records) and 200 after it`.
        public var description: String {
            let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
            var text = "recovered \(recordCount) record\(recordCount == 1 ? "" : "s")"
            text += " in \(String(format: "%.3f", seconds)) s: "
            if let snapshotGeneration {
                text +=
                    "snapshot \(snapshotGeneration) (\(snapshotRecordCount) records) and \(replayedRecordCount) after it"
            } else {
                text += "\(replayedRecordCount) record\(replayedRecordCount == 1 ? "" : "s") from the start"
            }
            if !problems.isEmpty {
                text += "; \(problems.count) problem\(problems.count == 1 ? "" : "s"): "
                // Each message is a sentence; here they are clauses of one.
                text += problems.map { clause($0.message) }.joined(separator: "; ")
            }
            return text
        }
    }
}

/// Recovers the stores from a journal directory: see ``Journal``.
struct JournalRecovery {
    /// What recovery produced.
    struct Outcome {
        var report: Journal.Recovery
        /// The generation the journal goes on in.
        var generation: Int
        /// Whether it appends to that generation's records (`true`), or starts the generation after
        /// ``lastGeneration`` with a snapshot.
        var continues: Bool
        /// The highest generation in the directory.
        var lastGeneration: Int
    }

    let files: JournalDirectory
    let dispatcher: Dispatcher
    let stores: [any JournaledStore]
    let migrations: [StateMigration]

    func run() throws(JournalError) -> Outcome {
        let listing = try files.list()
        var problems: [JournalError] = []
        var moveAside: [String] = []
        var base: (snapshot: JournalSnapshot, states: [(any JournaledStore, any StateType, UInt64)])?
        for generation in listing.snapshots.reversed() {
            let path = files.snapshotPath(generation)
            let snapshot: JournalSnapshot
            switch Result(catching: { () throws(JournalSnapshot.Problem) in try JournalSnapshot.read(path) }) {
            case .success(let read):
                snapshot = read
            case .failure(.newer(let version)):
                throw JournalSnapshot.newerFormat(version, source: path, note: " (nothing was changed)")
            case .failure(.damaged(let reason)):
                problems.append(
                    JournalError(
                        .corruptSnapshot,
                        path: path,
                        message: "the snapshot \(path) is damaged: \(reason); it was moved to \(files.quarantinePath) "
                            + "and an older one used"
                    )
                )
                moveAside.append(path)
                continue
            }
            base = (snapshot, try decodeStates(snapshot, path: path, problems: &problems))
            break
        }
        let first = base?.snapshot.generation ?? 0
        if base == nil, let oldest = listing.records.first, oldest > 0 {
            throw JournalError(
                .unrecoverable,
                path: files.path,
                message: "no snapshot in \(files.path) can be read"
                    + (problems.isEmpty ? "" : " (\(problems.map(\.message).joined(separator: "; ")))")
                    + ", and the records before generation \(oldest) were compacted away; nothing was changed"
            )
        }
        // From here on the directory may change: recovery goes through.
        for path in moveAside {
            _ = try files.quarantine(moving: path)
        }
        var sequenceNumbers: [String: UInt64] = [:]
        for (store, state, sequenceNumber) in base?.states ?? [] {
            _ = store.restore(anyState: state, sequenceNumber: sequenceNumber)
            sequenceNumbers[store.identifier] = sequenceNumber
        }
        if let base {
            ReplayObservation.observer?.recoveryDidRestore(
                snapshot: files.snapshotPath(base.snapshot.generation),
                generation: base.snapshot.generation,
                recordCount: base.snapshot.recordCount
            )
        }
        let segments = listing.records.filter { $0 >= first }
        let replayer = Replayer(dispatcher: dispatcher, path: files.path, window: 10_000, base: sequenceNumbers)
        for generation in segments {
            try replay(generation, into: replayer, problems: &problems)
        }
        let outcome = replayer.finish()
        for divergence in outcome.divergences {
            problems.append(
                JournalError(record: divergence, code: divergence.code == .unknownStore ? .unknownStore : .divergence)
            )
        }
        for temporary in listing.temporaries {
            unlink(temporary)
        }
        let last = max(listing.snapshots.last ?? 0, listing.records.last ?? 0)
        let replayed = outcome.replayed + outcome.covered
        let report = Journal.Recovery(
            snapshotGeneration: base?.snapshot.generation,
            snapshotRecordCount: base?.snapshot.recordCount ?? 0,
            replayedRecordCount: outcome.replayed,
            recordCount: (base?.snapshot.recordCount ?? 0) + replayed,
            problems: problems,
            duration: .zero
        )
        // Go on in the last records file only when it is the snapshot's and nothing was replayed or
        // found wrong; otherwise start a new generation, so that a file with a torn tail or records
        // replayed on top of a snapshot is never appended to.
        let continues = problems.isEmpty && outcome.replayed == 0 && last == first
        return Outcome(report: report, generation: first, continues: continues, lastGeneration: last)
    }

    /// Each stored state decoded (or migrated) for its registered store.
    func decodeStates(
        _ snapshot: JournalSnapshot,
        path: String,
        problems: inout [JournalError]
    ) throws(JournalError) -> [(any JournaledStore, any StateType, UInt64)] {
        var states: [(any JournaledStore, any StateType, UInt64)] = []
        for stored in snapshot.stores {
            guard let store = stores.first(where: { $0.identifier == stored.storeIdentifier }) else {
                problems.append(
                    JournalError(
                        .unknownStore,
                        path: path,
                        storeIdentifier: stored.storeIdentifier,
                        message: "the snapshot \(path) holds store '\(stored.storeIdentifier)', which is not "
                            + "registered; its state was ignored"
                    )
                )
                continue
            }
            let current = store.stateType.journalVersion
            let state: any StateType
            do {
                if stored.version > current {
                    throw JournalError(
                        .newerStateVersion,
                        path: path,
                        storeIdentifier: store.identifier,
                        message:
                            "the snapshot \(path) holds version \(stored.version) of store '\(store.identifier)''s "
                            + "state, newer than version \(current) of \(store.stateType); use a newer program "
                            + "(nothing was changed)"
                    )
                } else if stored.version < current {
                    guard let migration = migrations.first(where: { $0.stateType == ObjectIdentifier(store.stateType) })
                    else {
                        throw JournalError(
                            .missingMigration,
                            path: path,
                            storeIdentifier: store.identifier,
                            message: "the snapshot \(path) holds version \(stored.version) of store "
                                + "'\(store.identifier)''s state and \(store.stateType) is version \(current); pass "
                                + "a StateMigration for \(store.stateType) (nothing was changed)"
                        )
                    }
                    state = try migration.migrate(stored.version, stored.state)
                } else {
                    state = try store.decodeState(from: stored.state)
                }
            } catch let error as JournalError {
                throw error
            } catch {
                throw JournalError(
                    .undecodableState,
                    path: path,
                    storeIdentifier: store.identifier,
                    message: "the state of store '\(store.identifier)' in \(path) (version \(stored.version)) does not "
                        + "become a \(store.stateType): \(ActionLog.describe(error)); if the type changed, raise its "
                        + "stateVersion and pass a StateMigration (nothing was changed)"
                )
            }
            guard type(of: state) == store.stateType else {
                throw JournalError(
                    .undecodableState,
                    path: path,
                    storeIdentifier: store.identifier,
                    message: "the migration for store '\(store.identifier)' returned a \(type(of: state)), not a "
                        + "\(store.stateType) (nothing was changed)"
                )
            }
            states.append((store, state, stored.sequenceNumber))
        }
        return states
    }

    /// Replays one records file, reporting what it cannot read.
    private func replay(
        _ generation: Int,
        into replayer: Replayer,
        problems: inout [JournalError]
    ) throws(JournalError) {
        let path = files.recordsPath(generation)
        replayer.path = path
        let actionTypes = stores.compactMap { $0.actionType as? any (ActionType & Decodable).Type }
        let stream: PrefetchingRecordStream
        do {
            stream = try PrefetchingRecordStream(path: path, actionTypes: actionTypes, stopsAtMalformedLines: false)
        } catch {
            throw JournalError(record: error, code: .unreadableFile)
        }
        defer { stream.close() }
        var damaged = false
        do {
            while let item = try stream.next() {
                switch item {
                case .entry(let entry): replayer.feed(entry)
                case .checkpoint(let line, let checks): replayer.feed(checks: checks, line: line)
                case .malformed(let error):
                    damaged = true
                    replayer.observer?.replayDidSkip(error)
                    problems.append(JournalError(record: error, code: .unreadableRecord))
                }
            }
        } catch {
            throw JournalError(record: error, code: .unreadableFile)
        }
        if damaged {
            let copy = try files.quarantine(copying: path)
            problems.append(
                JournalError(.unreadableRecord, path: path, message: "a copy of \(path) was kept as \(copy)")
            )
        }
        guard let tail = stream.tornTail else { return }
        // The file is never appended to again (recovery starts a new generation), so the tail stays;
        // its bytes are saved too, since compaction removes the file later.
        let saved = try save(tail, of: path)
        let kept = ActionLog.TornTail(
            line: tail.line,
            byteOffset: tail.byteOffset,
            byteCount: tail.byteCount,
            savedPath: saved
        )
        problems.append(JournalError(record: .torn(kept, path: path, cut: false), code: .tornTail))
    }

    /// Copies the bytes of `tail` into the quarantine.
    ///
    /// - Returns: The copy's path.
    private func save(_ tail: ActionLog.TornTail, of path: String) throws(JournalError) -> String {
        let target = try files.quarantineTarget(for: path, suffix: ".torn-\(tail.byteOffset)")
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            try handle.seek(toOffset: UInt64(tail.byteOffset))
            let bytes = try handle.readToEnd() ?? Data()
            try bytes.write(to: URL(fileURLWithPath: target))
        } catch {
            throw JournalError(
                .writeFailed,
                path: target,
                message: "cannot save the torn tail of \(path) to \(target): \(JournalDirectory.reason(error))"
            )
        }
        return target
    }
}
