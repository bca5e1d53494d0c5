import DispatchStore
import Foundation

/// One row of the timeline: a transaction, a line that could not be read, a snapshot or checkpoint,
/// or a change of the stores' states made outside any action (a recorder's move).
struct TimelineRow {
    /// The row's number: rows are numbered from 0 in the order they were recorded, dropped ones
    /// included.
    let number: Int
    let time: Date
    var content: Content
    /// The stores whose state the row changed, with the changes.
    var changes: [StoreChanges] = []

    enum Content {
        case transaction(TransactionRecord)
        case problem(Problem)
        case marker(Marker)
        /// The states changed outside any action: a recorder's move (described) or an update.
        case restore(String)
    }

    var transaction: TransactionRecord? {
        if case .transaction(let record) = content { return record }
        return nil
    }
}

/// How one store's state changed in a row.
struct StoreChanges {
    let store: Int
    /// The changes; empty while the state read after the row waits to be encoded (`isPending`).
    var changes: [TreeChange] = []
    /// Whether the state read after the row waits to be encoded (see ``StoreTrack``).
    var isPending = false
    /// Set when the state read after the row is not the one the row's action left: the store had
    /// applied later actions too (their sequence number), or a later state had been read before.
    var note: String?
}

/// What the inspector keeps of a transaction.
struct TransactionRecord {
    /// The transaction's id; for a replayed line, the id the log gives it.
    let id: UInt64
    let mode: DispatchMode
    let target: String?
    /// The action, kept as a value and shown when the page is written.
    let action: any ActionType
    /// From the moment the first store began until the transaction ended; `nil` when no store did.
    var duration: Duration?
    /// The stores in the order they applied the action, then those that did not apply it.
    var steps: [Step] = []
    /// What the dispatch reported as a whole (an unhandled action, a timeout), if anything.
    var error: String?
    /// Where the transaction was read from, for a replay: the file (an index into the page's list)
    /// and the line.
    var file: Int?
    var line: Int?
    /// The recorder's history entry the transaction made or joined.
    var historyEntry: Int?
    /// Digests recorded with the line, compared with the states the replay computed.
    var checks: [CheckResult] = []
    /// How many dispatches the replay needed for the line (one per store when they could not go
    /// together).
    var parts = 1

    /// One store's part.
    struct Step {
        let store: Int
        let sequenceNumber: UInt64?
        let status: Status
    }

    /// How a store's operation ended.
    enum Status: Equatable {
        case succeeded
        case cancelled
        case failed(String)
    }
}

/// A line or a file that could not be used, or a way in which a replay did not reproduce the run.
struct Problem {
    /// A short name for the page: `torn`, `unreadable`, `unknownType`, `divergence`, `dropped`,
    /// `encoding`, `recovery`.
    let kind: String
    let message: String
    var file: Int?
    var line: Int?
    /// The row that shows it, if it has one.
    var row: Int?
}

/// A snapshot or a checkpoint in the timeline, with the digests it holds compared with the states
/// the replay computed.
struct Marker {
    let kind: String
    let text: String
    var file: Int?
    var line: Int?
    var checks: [CheckResult] = []
}

/// One recorded digest of a store's state, compared with the state the replay computed.
struct CheckResult {
    let store: Int
    let sequenceNumber: UInt64
    /// Whether they match; `nil` until the store reached the sequence number (or never did).
    var matches: Bool?
    let line: Int
}
