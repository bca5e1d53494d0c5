/// A change without an action: a restore, or an update outside any operation.
final class StateChange<State, Action>: Change<State, Action> {
    /// Copies the state at `state`.
    init(state: UnsafePointer<State>) {
        super.init(copying: state, hasAction: false)
    }
}
