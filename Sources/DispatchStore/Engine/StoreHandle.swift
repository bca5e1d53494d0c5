import Foundation

/// A store as a run's steps reach it: what `beginStep` and the delivery need, as a class without
/// the store's generic types, which a route keeps unretained.
///
/// A ``StoreEntry`` is an existential: every call through one retains and releases the store
/// around it. A route reaches each store's handle through an `Unmanaged` reference instead, with no
/// reference counting per step (S7); ``TypedStoreHandle`` reaches the store with its types.
class StoreHandle: @unchecked Sendable {
    // @unchecked: immutable; the store it reaches is thread-safe.

    /// See `StoreEntry.beginStep(_:prepared:dependencies:context:makeFinishHook:)`.
    func beginStep(
        _ action: UnsafeRawPointer,
        prepared: Operation?,
        dependencies: [Operation]?,
        context: ThreadContext,
        makeFinishHook: () -> StepStart.FinishHook
    ) -> StepStart {
        preconditionFailure("DispatchStore: a StoreHandle without a store's types was used")
    }

    /// Delivers the store's queued changes to its observers; see `Store.deliverPendingChanges(context:)`.
    func deliverPendingChanges(context: ThreadContext) {
        preconditionFailure("DispatchStore: a StoreHandle without a store's types was used")
    }

    /// Whether this handle reaches `store`.
    func reaches(_ store: AnyObject) -> Bool {
        preconditionFailure("DispatchStore: a StoreHandle without a store's types was used")
    }
}
