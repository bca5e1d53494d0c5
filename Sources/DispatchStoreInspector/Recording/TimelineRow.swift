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
