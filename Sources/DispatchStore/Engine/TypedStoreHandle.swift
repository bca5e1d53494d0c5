import Foundation

/// A ``StoreHandle`` that reaches its store with the store's types.
final class TypedStoreHandle<State: StateType, Action: ActionType>: StoreHandle, @unchecked Sendable {
    // @unchecked: as `StoreHandle`.

    /// The store, not retained: the route that keeps the handle keeps the store.
    private let store: Unmanaged<Store<State, Action>>

    /// A handle to `store`.
    init(store: Store<State, Action>) {
        self.store = .passUnretained(store)
    }

    override func beginStep(
        _ action: UnsafeRawPointer,
        prepared: Operation?,
        dependencies: [Operation]?,
        context: ThreadContext,
        makeFinishHook: () -> StepStart.FinishHook
    ) -> StepStart {
        store._withUnsafeGuaranteedRef { store in
            store.beginStep(
                action,
                prepared: prepared,
                dependencies: dependencies,
                context: context,
                makeFinishHook: makeFinishHook
            )
        }
    }

    override func deliverPendingChanges(context: ThreadContext) {
        store._withUnsafeGuaranteedRef { $0.deliverPendingChanges(context: context) }
    }

    override func reaches(_ store: AnyObject) -> Bool {
        store === self.store.takeUnretainedValue()
    }
}
