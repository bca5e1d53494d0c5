#if canImport(Observation)
public import Observation
import Foundation

/// An `@Observable` view of a store for SwiftUI and `withObservationTracking`, updated on the main
/// actor after each commit.
///
/// ```swift
/// struct CounterView: View {
///     let counter: ObservedStore<Counter, CounterAction>
///
///     var body: some View {
///         Text("\(counter.state.count)")  // re-rendered when the state changes
///     }
/// }
/// ```
///
/// ``state`` is the store's state as of the last main-actor turn that applied a change. Each commit
/// of the store (an operation that finished, an `updateState` outside any operation, a recorder
/// restore) reaches the observed store on whatever thread delivers it; the latest state is kept and
/// one update is scheduled on the main actor. Commits that arrive before that update runs are
/// coalesced into it: a burst of changes sets ``state`` once, so a view renders once per turn of the
/// main queue, with the latest state. The update always comes in a later turn, also when the commit
/// happened on the main actor (a `.mainThread` or `.sync` dispatch from a view): right after such a
/// dispatch returns, ``Store/state`` is already current and ``state`` is not yet.
///
/// - Note: Main-actor isolated: create and read it on the main actor. On Linux, the main actor runs
///   only while the main queue is driven (`RunLoop.main.run()`, `dispatchMain()`, or Swift Testing's
///   runner); updates wait until then. The observation lasts as long as the observed store; it holds
///   the store strongly and the store holds it weakly.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
@MainActor
@Observable
public final class ObservedStore<State: StateType, Action: ActionType> {
    /// The store's state as of the last main-actor turn that applied a change.
    ///
    /// Reading it inside a SwiftUI `body` or `withObservationTracking` tracks it: the view or the
    /// `onChange` hears of the next update.
    public private(set) var state: State

    /// The observed store; dispatch to its dispatcher as usual to change it.
    @ObservationIgnored public let store: Store<State, Action>
    @ObservationIgnored private let pending: PendingState<State>
    @ObservationIgnored private let subscription: Subscription

    /// Starts observing `store`, with its current state.
    ///
    /// ```swift
    /// let counter = ObservedStore(store)
    /// ```
    ///
    /// - Parameter store: The store to observe; it need not be registered with a dispatcher yet.
    /// - Note: Call it on the main actor.
    public init(_ store: Store<State, Action>) {
        let pending = PendingState<State>()
        self.store = store
        self.pending = pending
        // Subscribe before reading the state, so that no commit falls between the two.
        self.subscription = store.subscribe { state, _ in pending.receive(state) }
        self.state = store.state
        pending.start { [weak self] in
            Task { @MainActor in self?.applyPendingState() }
        }
    }

    /// Sets ``state`` to the latest state received since the last update, if any.
    private func applyPendingState() {
        if let latest = pending.take() {
            state = latest
        }
    }
}

/// The latest state a store delivered that the main actor has not applied yet, and whether an
/// update is scheduled.
private final class PendingState<State: Sendable>: Sendable {
    private struct Pending {
        var latest: State?
        var isScheduled = false
        var schedule: (@Sendable () -> Void)?

        /// The closure that schedules an update, when none is scheduled yet (marking one scheduled).
        mutating func claimSchedule() -> (@Sendable () -> Void)? {
            guard !isScheduled, let schedule else { return nil }
            isScheduled = true
            return schedule
        }
    }

    private let pending = LockedBox(Pending())

    /// Keeps `state` as the latest; schedules an update unless one is scheduled already.
    func receive(_ state: State) {
        let schedule = pending.withLockedValue { pending in
            pending.latest = state
            return pending.claimSchedule()
        }
        schedule?()
    }

    /// Starts scheduling updates with `schedule`, at once if a state arrived already.
    func start(_ schedule: @escaping @Sendable () -> Void) {
        let now = pending.withLockedValue { pending in
            pending.schedule = schedule
            return pending.latest == nil ? nil : pending.claimSchedule()
        }
        now?()
    }

    /// The latest state received, if any; the next state received schedules a new update.
    func take() -> State? {
        pending.withLockedValue { pending in
            defer {
                pending.latest = nil
                pending.isScheduled = false
            }
            return pending.latest
        }
    }
}
#endif
