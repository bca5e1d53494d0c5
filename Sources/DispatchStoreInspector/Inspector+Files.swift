public import DispatchStore
public import DispatchStoreJournal
import Foundation

extension Inspector {
    /// Replays an action log into `dispatcher` with the inspector attached, so that each line
    /// becomes a row of the page, with the states the program's own stores compute.
    ///
    /// ```swift
    /// let inspector = Inspector(limit: 1_000_000)
    /// let report = try inspector.replay(contentsOf: "actions.jsonl", into: dispatcher, actionTypes: [InventoryAction.self])
    /// try inspector.writePage(to: "actions.html")
    /// ```
    ///
    /// The replay is ``DispatchStoreJournal/ActionLog/replay(contentsOf:into:actionTypes:reorderWindow:)``'s,
    /// with one difference: a line it cannot read (not a record, an action type not in
    /// `actionTypes`) does not stop it. Each such line is a row of the page, marked, and is listed
    /// first among the report's divergences, so the report does not succeed. Rows carry the log's
    /// transaction ids (`#tx=ID` in the page's address selects one), the logged times and lines; a
    /// torn last line, checkpoints and state digests are rows or notes too, each digest compared
    /// with the state the replay computed.
    ///
    /// - Parameters:
    ///   - path: The action log.
    ///   - dispatcher: The dispatcher to replay into, with the same stores as the one that wrote the
    ///     log. The inspector registers itself with it if it is not registered yet.
    ///   - actionTypes: The action types the log may hold.
    ///   - reorderWindow: As for `ActionLog.replay`.
    /// - Returns: What the replay did.
    /// - Throws: ``DispatchStoreJournal/ActionLogError`` naming the path when the file cannot be read
    ///   (missing, a directory, a line longer than `ActionLog.maximumLineLength`).
    /// - Note: Call it from one thread, with nothing else dispatching to the stores.
    @discardableResult
    public func replay(
        contentsOf path: String,
        into dispatcher: Dispatcher,
        actionTypes: [any (ActionType & Decodable).Type],
        reorderWindow: Int = 10_000
    ) throws(ActionLogError) -> ActionLog.ReplayReport {
        if !dispatcher.middleware.contains(where: { $0 === self }) {
            dispatcher.register(middleware: self)
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? nil
        withSettledState { state in
            state.source.kind = "log"
            state.source.path = path
            state.source.bytes = size
            state.replay = InspectorState.ReplayContext()
        }
        let outcome = ReplayObservation.$observer.withValue(self) {
            Result { () throws(ActionLogError) in
                try ActionLog.replay(
                    contentsOf: path,
                    into: dispatcher,
                    actionTypes: actionTypes,
                    reorderWindow: reorderWindow,
                    skippingMalformedLines: true
                )
            }
        }
        let report: ActionLog.ReplayReport
        switch outcome {
        case .success(let value): report = value
        case .failure(let error):
            withSettledState { $0.replay = nil }
            throw error
        }
        withSettledState { state in
            // A line without a time of its own (torn, unreadable, a checkpoint) takes the time of
            // the line before it.
            let time = state.replay?.entry?.time ?? Date()
            state.replay = nil
            if let torn = report.tornTail {
                state.note(
                    Problem(
                        kind: "torn",
                        message: "The last line, \(torn), of \(path) was cut short (a crash while it was written); it "
                            + "was skipped.",
                        file: state.file(path),
                        line: torn.line
                    ),
                    time: time,
                    hasRow: true
                )
            }
            state.source.lines = max(state.source.lines ?? 0, report.tornTail?.line ?? 0)
            for divergence in report.divergences
            where divergence.code != .malformedLine && divergence.code != .unknownActionType {
                state.note(
                    Problem(
                        kind: "divergence",
                        message: divergence.message,
                        file: state.file(path),
                        line: divergence.line
                    ),
                    time: time,
                    hasRow: false
                )
            }
            for line in report.mismatchedLines {
                state.note(
                    Problem(
                        kind: "divergence",
                        message: "Line \(line) of \(path) did not end as logged: a store that succeeded was "
                            + "cancelled or failed in the replay, or the other way round.",
                        file: state.file(path),
                        line: line
                    ),
                    time: time,
                    hasRow: false
                )
            }
        }
        return report
    }

    /// Runs `openJournal`, which opens a `Journal` on a dispatcher the inspector is registered
    /// with, and follows its recovery: the snapshot it starts from is a row with the states it
    /// holds, each record it replays a row with the record's id, time and line, and each record it
    /// cannot read a row of its own, marked; what recovery worked around is listed in the page's
    /// header.
    ///
    /// ```swift
    /// dispatcher.register(middleware: inspector)
    /// let journal = try inspector.recordRecovery {
    ///     try Journal(directory: "/var/lib/inventory", dispatcher: dispatcher)
    /// }
    /// ```
    ///
    /// Register the inspector before opening the journal, and the journal's other middleware after
    /// it: recovery dispatches through every middleware registered at the time.
    ///
    /// - Parameter openJournal: Opens the journal.
    /// - Returns: The journal.
    /// - Throws: What `openJournal` throws.
    public func recordRecovery<Failure: Error>(
        _ openJournal: () throws(Failure) -> Journal
    ) throws(Failure) -> Journal {
        withSettledState { $0.replay = InspectorState.ReplayContext() }
        let outcome = ReplayObservation.$observer.withValue(self) { Result { () throws(Failure) in try openJournal() } }
        let time = Date()
        let journal: Journal
        switch outcome {
        case .success(let value): journal = value
        case .failure(let error):
            withSettledState { $0.replay = nil }
            throw error
        }
        withSettledState { state in
            state.replay = nil
            state.source.kind = "journal"
            state.source.path = journal.directory
            state.source.detail = "\(journal.recovery)"
            for problem in journal.recovery.problems where problem.code != .unreadableRecord || problem.line == nil {
                state.note(
                    Problem(
                        kind: problem.code == .tornTail ? "torn" : "recovery",
                        message: problem.message,
                        file: state.file(problem.path),
                        line: problem.line
                    ),
                    time: time,
                    hasRow: problem.code == .tornTail
                )
            }
        }
        return journal
    }
}

extension Inspector: ReplayObserver {
    package func replayWillApply(_ entry: ActionLog.Entry, from path: String) {
        withSettledState { state in
            let file = state.file(path)
            let previous = state.replay?.entry
            if previous?.line != entry.line || previous?.file != file {
                state.replay?.entryRow = nil
            }
            state.replay?.entry = InspectorState.ReplayedEntry(
                id: entry.id,
                time: entry.time,
                mode: entry.mode,
                target: entry.targetIdentifier,
                line: entry.line,
                file: file
            )
            state.source.lines = max(state.source.lines ?? 0, entry.line)
        }
    }

    package func replayDidReadCheckpoint(
        line: Int,
        path: String,
        stores: [(identifier: String, sequenceNumber: UInt64)]
    ) {
        withSettledState { state in
            let time = state.replay?.entry?.time ?? Date()
            let file = state.file(path)
            var marker = Marker(
                kind: "checkpoint",
                text:
                    "Checkpoint: the digests of \(stores.count) store\(stores.count == 1 ? "" : "s") when the log was closed",
                file: file,
                line: line
            )
            marker.checks = stores.map { store in
                CheckResult(
                    store: state.storeIndex[store.identifier] ?? state.track(named: store.identifier),
                    sequenceNumber: store.sequenceNumber,
                    matches: nil,
                    line: line
                )
            }
            state.append(time: time, .marker(marker))
            state.replay?.entryRow = nil
            state.source.lines = max(state.source.lines ?? 0, line)
        }
    }

    package func replayDidVerify(
        storeIdentifier: String,
        sequenceNumber: UInt64,
        line: Int,
        path: String,
        matches: Bool
    ) {
        withSettledState { state in
            let file = state.file(path)
            let store = state.storeIndex[storeIdentifier] ?? state.track(named: storeIdentifier)
            let result = CheckResult(store: store, sequenceNumber: sequenceNumber, matches: matches, line: line)
            state.attach(result, file: file)
            if !matches {
                state.note(
                    Problem(
                        kind: "divergence",
                        message:
                            "The digest of store '\(storeIdentifier)' recorded at line \(line) of \(path) does not "
                            + "match the state the replay computed after its action #\(sequenceNumber).",
                        file: file,
                        line: line
                    ),
                    time: Date(),
                    hasRow: false
                )
            }
        }
    }

    package func replayDidSkip(_ error: ActionLogError) {
        withSettledState { state in
            let time = state.replay?.entry?.time ?? Date()
            state.note(
                Problem(
                    kind: error.code == .unknownActionType ? "unknownType" : "unreadable",
                    message: error.message,
                    file: state.file(error.path),
                    line: error.line
                ),
                time: time,
                hasRow: true
            )
            state.replay?.entryRow = nil
            if let line = error.line { state.source.lines = max(state.source.lines ?? 0, line) }
        }
    }

    package func recoveryDidRestore(snapshot path: String, generation: Int, recordCount: Int) {
        let stores = dispatcher?.consistentCut() ?? []
        let time = Date()
        withSettledState { state in
            let file = state.file(path)
            state.append(stores, time: time) { captures in
                var marker = Marker(
                    kind: "snapshot",
                    text:
                        "Snapshot \(generation): the states after \(recordCount) record\(recordCount == 1 ? "" : "s"), "
                        + "checked against its digest when read",
                    file: file,
                    line: nil
                )
                marker.checks = captures.map {
                    CheckResult(store: $0.store, sequenceNumber: $0.sequenceNumber, matches: true, line: 0)
                }
                return .marker(marker)
            }
        }
    }
}

extension InspectorState {
    /// Puts a digest's comparison on the row of its line: a checkpoint's, or a record's.
    mutating func attach(_ result: CheckResult, file: Int) {
        // Rows are found by number and changed in place: holding the rows while changing one
        // would copy them all.
        let last = firstKeptRow + keptRows.count - 1
        var number = last
        while number >= max(firstKeptRow, last - 9_999) {
            let attached =
                withRow(number) { row -> Bool in
                    switch row.content {
                    case .marker(var marker) where marker.line == result.line && marker.file == file:
                        if let index = marker.checks.firstIndex(where: {
                            $0.store == result.store && $0.sequenceNumber == result.sequenceNumber
                        }) {
                            marker.checks[index].matches = result.matches
                        } else {
                            marker.checks.append(result)
                        }
                        row.content = .marker(marker)
                        return true
                    case .transaction(var record) where record.line == result.line && record.file == file:
                        record.checks.append(result)
                        row.content = .transaction(record)
                        return true
                    default:
                        return false
                    }
                } ?? true
            if attached { return }
            number -= 1
        }
    }
}
