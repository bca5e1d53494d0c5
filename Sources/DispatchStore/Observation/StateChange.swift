/// A committed state waiting to be delivered to a store's observers.
struct StateChange<State, Action> {
    /// The state right after the commit.
    let state: State
    /// The action whose operation produced it; `nil` for a restore or an update outside any operation.
    let action: Action?
}
