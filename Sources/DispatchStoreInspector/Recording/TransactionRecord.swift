import DispatchStore
import Foundation

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
