import Foundation

/// How a store's step started: what `StoreEntry.beginStep` returns; plain fields, not a
/// `StoreOutcome.Status`, whose payload would be copied and destroyed on every inline step (S1).
struct StepStart {
    /// What an operation still running calls when it finishes: its status and sequence number (0: not applied).
    typealias FinishHook = @Sendable (StoreOutcome.Status, UInt64) -> Void

    /// The operation the reducer returned (`nil` for an inline reduction).
    let operation: Operation?
    /// How the step ended if it finished at once; `nil` while its operation runs (its finish hook follows).
    let ending: TransactionMachine.Ending?
    /// The error of a failed step (the machine records only that it failed).
    let error: (any Error)?
    /// Whether a change may be queued for the store's observers.
    let needsDelivery: Bool

    /// A step reduced inline.
    static func reduced(needsDelivery: Bool) -> StepStart {
        StepStart(operation: nil, ending: .succeeded, error: nil, needsDelivery: needsDelivery)
    }

    /// A step whose inline reduction failed.
    static func failed(_ error: any Error, needsDelivery: Bool) -> StepStart {
        StepStart(operation: nil, ending: .failed, error: error, needsDelivery: needsDelivery)
    }

    /// A step whose operation finished before starting it returned.
    static func finished(_ operation: Operation, _ status: StoreOutcome.Status, needsDelivery: Bool) -> StepStart {
        StepStart(operation: operation, ending: status.ending, error: status.error, needsDelivery: needsDelivery)
    }

    /// A step whose operation runs on: the finish hook will tell how it ends.
    static func running(_ operation: Operation) -> StepStart {
        StepStart(operation: operation, ending: nil, error: nil, needsDelivery: true)
    }
}
