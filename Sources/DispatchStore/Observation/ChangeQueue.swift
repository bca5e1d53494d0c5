/// The committed changes of one store waiting to be delivered to its observers, oldest first.
final class ChangeQueue<State, Action> {
    private let changes = FIFO<Change<State, Action>>()
    /// The classes of the changes, kept so that the store's code, which is not specialised, makes
    /// each change without looking up their metadata at run time.
    private let actionChange = ActionChange<State, Action>.self
    private let stateChange = StateChange<State, Action>.self

    /// How many changes wait.
    var count: Int {
        changes.count
    }

    /// Queues a change made of a copy of the state at `state` and of the action at `action` (`nil`:
    /// none).
    func append(state: UnsafePointer<State>, action: UnsafePointer<Action>?) {
        if let action {
            changes.append(actionChange.init(state: state, action: action))
        } else {
            changes.append(stateChange.init(state: state))
        }
    }

    /// Removes and returns the oldest change, or `nil` when none waits.
    func removeFirst() -> Change<State, Action>? {
        changes.isEmpty ? nil : changes.removeFirst()
    }
}
