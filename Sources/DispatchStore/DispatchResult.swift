/// How one dispatch ended: which stores handled the action, which were cancelled or failed.
///
/// The completion passed to `Dispatcher.dispatch(_:to:mode:timeout:then:)` receives exactly one
/// result, after every reached store's operation has finished and its state is committed.
///
/// ```swift
/// dispatcher.dispatch(CounterAction.increase, mode: .serial) { result in
///     if result.isUnhandled { print("nobody handles", result.transaction.action) }
///     print(result.handledStores)  // ["counter"]
/// }
/// ```
public struct DispatchResult: Sendable, CustomStringConvertible {
    /// The transaction this result ends.
    public let transaction: Transaction
    /// One outcome per reached store, in the order their operations started.
    public let outcomes: [StoreOutcome]
    /// A problem with the dispatch as a whole, or `nil`.
    ///
    /// Set when no store handles the action (``DispatchError/Code/unhandledAction``), for an unknown or
    /// mismatched `to:` identifier, after a timeout, or when the dispatcher was shut down.
    public let error: DispatchError?

    init(transaction: Transaction, outcomes: [StoreOutcome], error: DispatchError?) {
        self.transaction = transaction
        self.outcomes = outcomes
        self.error = error
    }

    /// The identifiers of the stores whose operations succeeded (finished normally).
    public var handledStores: [String] {
        outcomes.filter(\.status.isSuccessful).map(\.storeIdentifier)
    }

    /// The identifiers of the stores whose operations were cancelled or skipped.
    public var cancelledStores: [String] {
        outcomes.filter(\.status.isCancelled).map(\.storeIdentifier)
    }

    /// The identifiers of the stores whose operations failed, with their errors.
    public var failures: [(storeIdentifier: String, error: any Error)] {
        outcomes.compactMap { outcome in outcome.status.error.map { (outcome.storeIdentifier, $0) } }
    }

    /// Whether no store handled the action (no store handles its type, or the `to:` store is unknown
    /// or handles another type).
    public var isUnhandled: Bool {
        outcomes.isEmpty
    }

    /// Whether some store's operation was cancelled (by ``Transaction/cancel()``, by a timeout, or
    /// because a store it waits for was cancelled or failed).
    public var wasCancelled: Bool {
        outcomes.contains { $0.status.isCancelled }
    }

    /// Whether some store's operation failed.
    public var hasFailures: Bool {
        outcomes.contains { $0.status.error != nil }
    }

    /// Whether every reached store succeeded and there was no error.
    public var succeeded: Bool {
        error == nil && !outcomes.isEmpty && outcomes.allSatisfy(\.status.isSuccessful)
    }

    /// A line such as `#3 increase: counter succeeded, totals cancelled`.
    public var description: String {
        var parts = outcomes.map { "\($0.storeIdentifier) \($0.status)" }
        if let error { parts.append("error: \(error)") }
        return "#\(transaction.id) \(transaction.action): \(parts.joined(separator: ", "))"
    }
}
