import Foundation

/// What the engine calls when a store's operation that was still running finishes: its status, and
/// the sequence number the store gave the action (0 when the operation never ran its body).
typealias StepFinishHook = @Sendable (StoreOutcome.Status, UInt64) -> Void

/// How a store's part of a transaction (a "step") started.
///
/// Plain fields rather than a `StoreOutcome.Status`, whose payload would be copied and destroyed
/// on every inline step (S1).
struct StepStart {
    /// The operation the reducer returned, if it is one of its own (`nil` for an inline reduction).
    let operation: Operation?
    /// How the step ended when it finished before starting returned; `nil` while its operation runs
    /// (the finish hook will be called exactly once).
    let ending: TransactionMachine.Ending?
    /// The error of a failed step (the machine records only that it failed; the run keeps the error).
    let error: (any Error)?
    /// Whether a change may be queued for the store's observers.
    let needsDelivery: Bool

    /// A step that finished at once.
    static func finished(needsDelivery: Bool) -> StepStart {
        StepStart(operation: nil, ending: .finished, error: nil, needsDelivery: needsDelivery)
    }

    /// A step that failed at once, without an operation of its own.
    static func failed(_ error: any Error, needsDelivery: Bool) -> StepStart {
        StepStart(operation: nil, ending: .failed, error: error, needsDelivery: needsDelivery)
    }

    /// A step whose operation finished before starting it returned.
    static func ended(_ operation: Operation, _ status: StoreOutcome.Status, needsDelivery: Bool) -> StepStart {
        switch status {
        case .finished:
            StepStart(operation: operation, ending: .finished, error: nil, needsDelivery: needsDelivery)
        case .cancelled:
            StepStart(operation: operation, ending: .cancelled, error: nil, needsDelivery: needsDelivery)
        case .failed(let error):
            StepStart(operation: operation, ending: .failed, error: error, needsDelivery: needsDelivery)
        }
    }

    /// A step whose operation runs on: the finish hook will tell how it ends.
    static func running(_ operation: Operation) -> StepStart {
        StepStart(operation: operation, ending: nil, error: nil, needsDelivery: true)
    }
}
