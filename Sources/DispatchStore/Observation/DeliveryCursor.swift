/// Where a store's observer delivery stands, so that a delivery nested inside an observer callback
/// (a re-entrant dispatch) continues exactly where the outer one is, keeping every observer's calls
/// in commit order.
///
/// Touched only under the store's recursive delivery lock.
final class DeliveryCursor<State, Action> {
    /// The change being delivered, if any.
    var change: StateChange<State, Action>?
    /// The subscriptions snapshot taken when `change` was dequeued.
    var observers = ObserverSet.empty
    /// The ranges of `observers.entries` to call for `change`: the whole-state observers and the
    /// groups whose value changed.
    var ranges: [Range<Int>] = []
    /// The position, behind a pointer: read and written once per observer call, it should not pay
    /// for a dynamic exclusivity check each time.
    let position: UnsafeMutablePointer<Position>

    struct Position {
        /// The range being called, and the next entry to call in it.
        var range = 0
        var index = 0
        /// Incremented whenever a new change starts, so a loop can tell that a nested delivery moved on.
        var generation: UInt64 = 0
        /// Whether an observer bound to a released object was skipped (and should be removed).
        var sawReleasedObserver = false
    }

    init() {
        position = .allocate(capacity: 1)
        position.initialize(to: Position())
    }

    deinit {
        position.deinitialize(count: 1)
        position.deallocate()
    }

    /// Starts delivering `change` to `observers`: evaluates each key-path group once.
    func start(_ change: StateChange<State, Action>, observers: ObserverSet) {
        self.change = change
        self.observers = observers
        ranges = observers.stateObserverCount > 0 ? [0..<observers.stateObserverCount] : []
        if !observers.groups.isEmpty {
            withUnsafePointer(to: change.state) { state in
                for (group, range) in zip(observers.groups, observers.groupRanges)
                where group.update(UnsafeRawPointer(state)) {
                    ranges.append(range)
                }
            }
        }
        position.pointee.range = 0
        position.pointee.index = ranges.first?.lowerBound ?? 0
        position.pointee.generation &+= 1
    }

    /// Ends the current change.
    func finish() {
        change = nil
        observers = ObserverSet.empty
        ranges = []
    }
}
