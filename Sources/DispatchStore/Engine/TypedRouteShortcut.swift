/// A ``RouteShortcut`` that reaches its store with the store's types.
final class TypedRouteShortcut<State: StateType, Action: ActionType>: RouteShortcut, @unchecked Sendable {
    // @unchecked: as `RouteShortcut`; `typedStore` is immutable.

    /// The store, not retained: the shortcut's pin, or a dispatch inside it, keeps it alive.
    private let typedStore: Unmanaged<Store<State, Action>>

    /// A shortcut to `store`, the one store of a route.
    init(store: Store<State, Action>) {
        typedStore = .passUnretained(store)
        super.init(store: store)
    }

    /// Dispatches the action at `action` `.sync` to the store: enters the shortcut, then
    /// `Store.dispatch(_:through:context:)`.
    override func dispatch(_ action: UnsafeRawPointer, context: ThreadContext) -> Passage {
        if let refused = enter(context: context) { return refused }
        // The route of the shortcut holds a store whose `Action` is the dispatched action's type.
        let typed = action.assumingMemoryBound(to: Action.self)
        return typedStore._withUnsafeGuaranteedRef { $0.dispatch(typed, through: self, context: context) }
    }
}
