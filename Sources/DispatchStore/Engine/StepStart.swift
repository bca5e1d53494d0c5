import Foundation

/// What the engine calls when a store's operation that was still running finishes.
typealias StepFinishHook = @Sendable (StoreOutcome.Status) -> Void

/// How a store's part of a transaction (a "step") started.
struct StepStart {
    /// The operation the reducer returned, if it is one of its own (`nil` for an inline reduction).
    let operation: Operation?
    /// The status when the step already finished; `nil` while its operation runs (the finish hook
    /// will be called exactly once).
    let status: StoreOutcome.Status?
    /// Whether a change may be queued for the store's observers.
    let needsDelivery: Bool
}
