/// One committed change of a store: the state an operation, a restore or an update left.
///
/// Immutable, so that every observer of the change can be lent the same state: a delivery holds the
/// change while it calls the observers, and each call passes the state (and the action) straight
/// from these constants, where copying them out of mutable memory would retain every buffer the
/// state holds (its arrays, strings and dictionaries) once per observer. An observer that dispatches
/// `.sync` into the store may start the delivery of the next change; the change it was called with
/// stays alive, held by the delivery that is still calling observers with it.
///
/// A change is an ``ActionChange``, which adds the action that produced it, or a ``StateChange``
/// (a restore, or an update outside any operation): two classes rather than an `Action?` constant,
/// whose metadata the store's unspecialised code would look up at run time for every change.
@usableFromInline
class Change<State, Action> {
    @usableFromInline
    let state: State
    /// Whether this is an ``ActionChange``.
    @usableFromInline
    let hasAction: Bool

    /// Copies the state at `state`.
    init(copying state: UnsafePointer<State>, hasAction: Bool) {
        self.state = state.pointee
        self.hasAction = hasAction
    }
}
