public import DispatchStore
import Foundation

extension Inspector {
    /// Follows a recorder's history: which entry each transaction made or joined (its group), each
    /// move back and forth (a row of the timeline, with the states it restored), and where the
    /// history stands when the page is written (which transactions were undone at the end).
    ///
    /// ```swift
    /// let recorder = RecorderMiddleware(limit: 500)
    /// dispatcher.register(middleware: recorder)
    /// dispatcher.register(middleware: inspector)
    /// inspector.follow(recorder)
    /// ```
    ///
    /// Call it once the inspector is registered with the recorder's dispatcher, before the moves it
    /// should see.
    ///
    /// - Parameter recorder: The recorder; the inspector does not keep it alive.
    /// - Note: Thread-safe.
    public func follow(_ recorder: RecorderMiddleware) {
        let link = RecorderReference(recorder)
        withSettledState { state in
            state.recorder.followed = true
        }
        followed.withLockedValue { $0 = link }
        keep(recorder.subscribe { [weak self] in self?.recorderChanged(link) })
        recorderChanged(link)
    }

    /// Notes what the recorder just did: recorded a transaction, or moved.
    private func recorderChanged(_ link: RecorderReference) {
        guard let recorder = link.recorder, let entry = recorder.currentEntry else { return }
        let position = recorder.position
        let count = recorder.count
        let move: String? = withSettledState { state in
            if entry.id > state.recorder.newestEntry
                || (entry.id == state.recorder.newestEntry && entry.transactionCount > state.recorder.newestCount)
            {
                state.recorder.newestEntry = entry.id
                state.recorder.newestCount = entry.transactionCount
                state.recorder.currentEntry = entry.id
                if let transaction = entry.transaction { state.assign(transaction.id, toHistoryEntry: entry.id) }
                return nil
            }
            guard entry.id != state.recorder.currentEntry else { return nil }
            let direction = entry.id < state.recorder.currentEntry ? "undo" : "redo"
            state.recorder.currentEntry = entry.id
            return "\(direction): the recorder set every store to history entry \(entry.id) "
                + "(position \(position) of \(count - 1))"
        }
        guard let move else { return }
        guard let cut = dispatcher?.consistentCut() else { return }
        let time = Date()
        withSettledState { state in
            state.append(cut, time: time) { _ in .restore(move) }
        }
    }

    /// The recorder's entries and the entry the stores are at, for the page; `nil` when no recorder
    /// is followed.
    func recorderSummary() -> (entries: [(id: Int, transactions: Int, key: String?)], current: Int)? {
        guard let recorder = followed.withLockedValue({ $0.recorder }), let current = recorder.currentEntry else {
            return nil
        }
        let entries = recorder.entries.map { entry in
            (entry.id, entry.transactionCount, entry.groupKey.map { String(describing: $0) })
        }
        return (entries, current.id)
    }
}

/// A recorder, held weakly.
final class RecorderReference: @unchecked Sendable {
    // @unchecked: `object` is only touched under `lock`.
    private let lock = NSLock()
    private weak var object: RecorderMiddleware?

    init(_ recorder: RecorderMiddleware? = nil) {
        object = recorder
    }

    var recorder: RecorderMiddleware? {
        lock.withLock { object }
    }
}

extension InspectorState {
    /// Notes that `transaction` made or joined history entry `entry`: on its row when it has one,
    /// otherwise for when it ends.
    mutating func assign(_ transaction: UInt64, toHistoryEntry entry: Int) {
        let rows = keptRows
        for row in rows.reversed().prefix(64) {
            guard let record = row.transaction, record.id == transaction else { continue }
            withRow(row.number) { row in
                guard case .transaction(var record) = row.content else { return }
                record.historyEntry = entry
                row.content = .transaction(record)
            }
            return
        }
        recorder.entryOfTransaction[transaction] = entry
        if recorder.entryOfTransaction.count > 4_096 {
            // Transactions that never reach the inspector (it was registered later) must not pile up.
            recorder.entryOfTransaction.removeAll()
        }
    }
}
