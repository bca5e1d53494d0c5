/// Where a store's observer delivery stands, so that a delivery nested inside an observer callback
/// (a re-entrant dispatch) continues exactly where the outer one is, keeping every observer's calls
/// in commit order.
///
/// Touched only under the store's recursive delivery lock.
final class DeliveryCursor<State, Action> {
    /// The change being delivered, if any.
    private(set) var change: Change<State, Action>?
    /// The subscriptions snapshot taken when the change was dequeued.
    var observers = ObserverSet.empty
    /// The ranges of `observers.entries` to call for the change: the whole-state observers and the
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

    /// Takes the oldest change from `queue`, when there is no current change; call with the store's
    /// lock held, then ``start(number:observers:)``.
    ///
    /// - Returns: Whether a change was taken.
    func take(from queue: ChangeQueue<State, Action>) -> Bool {
        guard change == nil, let first = queue.removeFirst() else { return false }
        change = first
        return true
    }

    /// Starts delivering the change just taken to `observers`: evaluates each key-path group once.
    ///
    /// - Parameters:
    ///   - number: The change's number among the store's changes (0 for the first): subscriptions
    ///     made after it was committed do not receive it.
    ///   - observers: The subscriptions when it was taken.
    func start(number: UInt64, observers: ObserverSet) {
        self.observers = observers
        ranges = []
        if observers.stateObserverCount > 0 {
            let admitted = observers.admitted(0..<observers.stateObserverCount, change: number)
            if !admitted.isEmpty { ranges.append(admitted) }
        }
        if !observers.groups.isEmpty, let change: AnyObject = change {
            for (index, group) in observers.unretainedGroups.enumerated() {
                let changed = group._withUnsafeGuaranteedRef { group in
                    number >= group.since && group.update(change)
                }
                guard changed else { continue }
                let admitted = observers.admitted(observers.groupRanges[index], change: number)
                if !admitted.isEmpty { ranges.append(admitted) }
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
