/// The committed states of one store waiting to be delivered to its observers, oldest first: each a
/// state and, when an operation produced it, its action (none for a restore or an update outside any
/// operation).
///
/// Kept in queues of `State` and of `Action` rather than in one queue of `(State, Action?)` values:
/// the store's code is not specialised, and there every use of a type built from `State` and
/// `Action` (`Optional<Action>`, a struct of both) looks its metadata up at run time, about 7,000
/// instructions per change delivered (S2). These methods use only `State`, `Action` and `Bool`,
/// whose metadata the queue carries or the compiler knows.
final class ChangeQueue<State, Action> {
    private let states = FIFO<State>()
    private let actions = FIFO<Action>()
    /// For each queued state, whether `actions` holds its action.
    private let hasAction = FIFO<Bool>()

    /// How many changes wait.
    var count: Int {
        states.count
    }

    /// Queues a copy of the state at `state`, produced by the action at `action` (`nil`: none).
    func append(state: UnsafePointer<State>, action: UnsafePointer<Action>?) {
        states.append(state.pointee)
        if let action {
            actions.append(action.pointee)
            hasAction.append(true)
        } else {
            hasAction.append(false)
        }
    }

    /// Moves the oldest change into `state`, and its action, if it has one, into `action`; both point
    /// to uninitialised memory.
    ///
    /// - Returns: `nil` when no change waits; otherwise whether `action` was initialised.
    func moveFirst(state: UnsafeMutablePointer<State>, action: UnsafeMutablePointer<Action>) -> Bool? {
        guard let hasAction = hasAction.popFirst() else { return nil }
        states.moveFirst(to: state)
        if hasAction { actions.moveFirst(to: action) }
        return hasAction
    }
}
