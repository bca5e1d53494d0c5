/// How one store's operation for one transaction ended.
public struct StoreOutcome: Sendable, CustomStringConvertible {
    /// The end of a store's operation.
    public enum Status: Sendable, CustomStringConvertible {
        /// The operation ran and finished normally: it succeeded.
        case succeeded
        /// The operation was cancelled, or skipped because the transaction was cancelled, timed out,
        /// or a store it waits for did not finish normally.
        case cancelled
        /// The operation failed with an error (`ActionOperation.finish(throwing:)`, or a
        /// ``DispatchError`` such as a re-entrant `.sync` dispatch).
        case failed(any Error)

        /// Whether the operation finished normally (``succeeded``).
        public var isSuccessful: Bool {
            if case .succeeded = self { return true }
            return false
        }

        /// Whether the operation was cancelled or skipped.
        public var isCancelled: Bool {
            if case .cancelled = self { return true }
            return false
        }

        /// The error, when the operation failed.
        public var error: (any Error)? {
            if case .failed(let error) = self { return error }
            return nil
        }

        /// `succeeded`, `cancelled` or `failed(<error>)`.
        public var description: String {
            switch self {
            case .succeeded: "succeeded"
            case .cancelled: "cancelled"
            case .failed(let error): "failed(\(error))"
            }
        }
    }

    /// The store's identifier.
    public let storeIdentifier: String
    /// How its operation ended.
    public let status: Status
    /// The store's sequence number for this action, or `nil` when the store did not apply it.
    ///
    /// Every store numbers the actions it applies, 1, 2, 3, …, in the order it applies them (see
    /// ``Store/sequenceNumber``): an inline `reduce(_:into:)` applies the action when it commits, an
    /// operation of its own when it finishes having run its body, whatever its status. An operation
    /// skipped or cancelled before it ran gets no number. Replaying each store's actions in this
    /// order gives it the states it went through, even when concurrent `.async` transactions
    /// reached the stores in different orders.
    public let sequenceNumber: UInt64?

    init(storeIdentifier: String, status: Status, sequenceNumber: UInt64? = nil) {
        self.storeIdentifier = storeIdentifier
        self.status = status
        self.sequenceNumber = sequenceNumber
    }

    /// The identifier and the status, for example `counter finished`.
    public var description: String {
        "\(storeIdentifier) \(status)"
    }
}
