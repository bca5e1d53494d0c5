import DispatchStore
import Foundation

/// A transaction that ended, as the hooks saw it: what a row is made of.
///
/// A live inspector keeps these as they come (``InspectorState/keep(_:)``) and makes rows of them
/// only when something reads the rows (``InspectorState/settle()``): a transaction dropped past the
/// limit before that costs no row at all.
struct EndedTransaction {
    let result: DispatchResult
    let start: ContinuousClock.Instant?
    let end: ContinuousClock.Instant
    let time: Date
    /// The states read after each store applied the action, in the order they did.
    let captures: [InspectorState.Capture]
}

extension InspectorState {
    /// A store's state and sequence number, read after it applied a transaction's action.
    typealias Capture = (store: Int, state: any StateType, sequenceNumber: UInt64)

    /// What a row needs of an ended transaction: its steps, the states of the stores that applied
    /// it, and the sequence numbers those stores reported.
    struct Outline {
        var steps: [TransactionRecord.Step] = []
        var captures: [Capture] = []
        var expected: [(store: Int, number: UInt64)] = []
        var duration: Duration?
    }

    /// Keeps a transaction that ended, to make its row when the rows are read; drops the oldest
    /// transactions past the limit.
    mutating func keep(_ transaction: EndedTransaction) {
        ended.append(transaction)
        keptTransactions += 1
        while keptTransactions > limit {
            dropOldest()
        }
    }

    /// Makes the rows of the transactions kept by ``keep(_:)``, in the order they ended.
    mutating func settle() {
        guard endedHead < ended.count else { return }
        let waiting = ended
        ended = []
        endedHead = 0
        for transaction in waiting {
            if let transaction { recordLive(transaction, isCounted: true) }
        }
    }

    /// The index in ``pending`` of the transaction under way numbered `id`, added when new.
    mutating func pendingIndex(of id: UInt64) -> Int {
        var index = pending.count - 1
        while index >= 0 {
            if pending[index].id == id { return index }
            index -= 1
        }
        pending.append(Pending(id: id))
        return pending.count - 1
    }

    /// Takes the transaction under way numbered `id` out of ``pending``.
    mutating func removePending(_ id: UInt64) -> Pending {
        guard let index = pending.lastIndex(where: { $0.id == id }) else { return Pending(id: id) }
        pending.swapAt(index, pending.count - 1)
        return pending.removeLast()
    }

    /// Adds the row of a live transaction (not a replayed line); `isCounted` says whether
    /// ``keep(_:)`` counted it already.
    mutating func recordLive(_ transaction: EndedTransaction, isCounted: Bool) {
        let outline = outline(of: transaction)
        let result = transaction.result
        var record = TransactionRecord(
            id: result.transaction.id,
            mode: result.transaction.mode,
            target: result.transaction.targetIdentifier,
            action: result.transaction.action,
            duration: outline.duration,
            steps: outline.steps,
            error: result.error?.message
        )
        if !recorder.entryOfTransaction.isEmpty {
            record.historyEntry = recorder.entryOfTransaction.removeValue(forKey: result.transaction.id)
        }
        let changes = changes(for: outline.captures, row: nextRowNumber, expected: outline.expected)
        append(time: transaction.time, .transaction(record), changes: changes, isCounted: isCounted)
        encodeIfOverBudget(outline.captures)
    }

    /// The steps of an ended transaction, in the order its stores applied it, and the states of
    /// those that applied it.
    mutating func outline(of transaction: EndedTransaction) -> Outline {
        let result = transaction.result
        // A transaction reaches a few stores: arrays searched in place, not dictionaries.
        var outline = Outline(duration: transaction.start.map { transaction.end - $0 })
        outline.steps.reserveCapacity(result.outcomes.count)
        for capture in transaction.captures {
            let identifier = stores[capture.store].identifier
            let outcome = result.outcomes.first { $0.storeIdentifier == identifier }
            if let number = outcome?.sequenceNumber {
                outline.expected.append((capture.store, number))
                // Only stores that applied the action changed.
                outline.captures.append(capture)
            }
            outline.steps.append(
                .init(store: capture.store, sequenceNumber: outcome?.sequenceNumber, status: .init(outcome))
            )
        }
        for outcome in result.outcomes
        where !outline.steps.contains(where: { stores[$0.store].identifier == outcome.storeIdentifier }) {
            let index = storeIndex[outcome.storeIdentifier] ?? track(named: outcome.storeIdentifier)
            outline.steps.append(.init(store: index, sequenceNumber: outcome.sequenceNumber, status: .init(outcome)))
        }
        return outline
    }

    /// Drops the oldest transaction kept by ``keep(_:)`` without making its row: the states it
    /// left become the stores' states before the next row. (Called when no older row is kept.)
    mutating func dropOldestEnded() {
        guard let transaction = ended[endedHead] else {
            preconditionFailure("InspectorState: the oldest transaction kept (\(endedHead)) was already taken")
        }
        ended[endedHead] = nil
        endedHead += 1
        keptTransactions -= 1
        droppedTransactions += 1
        for capture in transaction.captures {
            let identifier = stores[capture.store].identifier
            let applied = transaction.result.outcomes.contains {
                $0.storeIdentifier == identifier && $0.sequenceNumber != nil
            }
            guard applied else { continue }
            stores[capture.store].start(with: capture.state, sequenceNumber: capture.sequenceNumber, at: nextRowNumber)
        }
        dropConsumedPrefix(of: &ended, head: &endedHead)
    }
}

extension TransactionRecord.Status {
    /// The status a row shows for a store's outcome (succeeded when the store has none).
    init(_ outcome: StoreOutcome?) {
        guard let outcome else {
            self = .succeeded
            return
        }
        switch outcome.status {
        case .succeeded: self = .succeeded
        case .cancelled: self = .cancelled
        case .failed(let error): self = .failed((error as? DispatchError)?.message ?? "\(error)")
        }
    }
}
