/// A change an operation made, with its action.
@usableFromInline
final class ActionChange<State, Action>: Change<State, Action> {
    @usableFromInline
    let action: Action

    /// Copies the state at `state` and the action at `action`.
    init(state: UnsafePointer<State>, action: UnsafePointer<Action>) {
        self.action = action.pointee
        super.init(copying: state, hasAction: true)
    }
}
