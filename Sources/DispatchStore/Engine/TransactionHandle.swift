import Foundation

/// The transaction of an awaited dispatch, for the task's cancellation handler, which may run
/// before the dispatch returned it.
final class TransactionHandle: Sendable {
    private let state = LockedBox<(transaction: Transaction?, cancelled: Bool)>((nil, false))

    func set(_ transaction: Transaction) {
        let cancelNow = state.withLockedValue { state in
            state.transaction = transaction
            return state.cancelled
        }
        if cancelNow { transaction.cancel() }
    }

    func cancel() {
        let transaction = state.withLockedValue { state in
            state.cancelled = true
            return state.transaction
        }
        transaction?.cancel()
    }
}
