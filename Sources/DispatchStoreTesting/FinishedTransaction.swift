import DispatchStore

/// A transaction the tester saw finish.
struct FinishedTransaction: Sendable {
    /// The order in which the tester saw transactions finish, from 1.
    let sequence: Int
    let result: DispatchResult
    /// Every store's state when it finished (a consistent cut), or `nil` when none was taken (an
    /// unhandled action, or a cut that could not be taken on that thread).
    let states: StoreStates?
    /// The step it finished during, while that step waited for its own transaction (a `.sync`
    /// dispatch from an observer or an operation), for messages.
    var during: String?
    /// Whether that step accounted for it, so that it needs no receive.
    ///
    /// It did when the transaction succeeded and the step's expectations, or the step's own
    /// transaction, cover every store it reached.
    var isAccountedFor = false
}
