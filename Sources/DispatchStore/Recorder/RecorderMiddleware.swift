public import Foundation

/// A middleware that keeps a bounded history of all stores' states, for undo, redo and time travel.
///
/// Register it like any middleware. It takes entry 0 (the states when it is registered), then one
/// entry each time a transaction that reached at least one store finishes: the states of every
/// store registered with the dispatcher, read at one instant with no commit in between (a
/// consistent cut across stores). Stores registered later are recorded too; entries taken before a
/// store existed hold the state it had when it was registered.
///
/// ```swift
/// let recorder = RecorderMiddleware(limit: 500)
/// dispatcher.register(middleware: recorder)
/// dispatcher.dispatch(CounterAction.increase, mode: .sync)
/// recorder.previous()   // every store is back to entry 0; observers have been called
/// recorder.next()       // and forward again
/// ```
///
/// Moving with ``previous()``, ``next()`` or ``jump(to:)`` sets every recorded store's state at one
/// instant and calls their observers with a `nil` action before returning; the move is not recorded
/// itself. A transaction that finishes after moving back drops the entries ahead (the redo tail).
/// When more than ``limit`` entries exist, the oldest are dropped. States should be value types, so
/// that entries are cheap, immutable snapshots.
///
/// **Undo steps of several transactions.** One user gesture often makes several transactions (a
/// key press that deletes an item and moves the selection, a drag that moves an item 40 times).
/// Two ways make them one entry, so that one ``previous()`` undoes the whole gesture:
///
/// - A key computed per transaction (`groupingBy:`, like redux-undo's `groupBy`): consecutive
///   recorded transactions with the same non-`nil` key make one entry, which holds the states after
///   the latest of them.
/// - An explicit ``Group``: the transactions you ``Group/include(_:)`` in it make one entry, whichever
///   thread they finish on and however long after the group ended.
///
/// Moving through the history ends every run of a key and every group's current step: the next
/// transaction starts a new entry.
///
/// - Note: Thread-safe; record while dispatches run on other threads. A recorder records the first
///   dispatcher it is registered with, until it is unregistered from it. Do not call it from a
///   reducer's `reduce(_:into:)` or an `updateState` closure (the moves report that as an error).
public final class RecorderMiddleware: Middleware, @unchecked Sendable {
    // @unchecked: every mutable property is guarded by `lock`; callbacks run outside it.

    /// One recorded instant.
    public struct Entry: Sendable, Identifiable {
        /// A number unique in this recorder, 0 for the first entry and higher for each entry after it.
        ///
        /// It does not change when older entries are dropped, nor when a later transaction of the
        /// same step (same key, or same ``Group``) replaces the newest entry's states. It changes
        /// only when a group's step moves past entries recorded in between: the step then becomes a
        /// new, newest entry.
        public let id: Int
        /// The transaction whose end was recorded (for a grouped entry, the latest one); `nil` for the
        /// first entry.
        public let transaction: Transaction?
        /// When the entry was taken (for a grouped entry, when its latest transaction was recorded).
        public let date: Date
        /// The states of the stores, in registration order.
        public fileprivate(set) var snapshots: [StoreSnapshot]
        /// The key that `groupingBy:` gave the entry's transactions; `nil` when it gave none, and for
        /// the entries of a ``Group``.
        public let groupKey: (any Hashable & Sendable)?
        /// How many recorded transactions the entry stands for: 0 for the first entry, 1 for an
        /// ordinary entry, more for a grouped one.
        public let transactionCount: Int
        /// The number of moves made before the entry was taken: entries of an earlier epoch are
        /// never merged into.
        fileprivate let epoch: Int
        /// The number of the ``Group`` whose step the entry is, if any.
        fileprivate let group: Int?

        /// The action of the recorded transaction (for a grouped entry, of the latest one); `nil`
        /// for the first entry.
        public var action: (any ActionType)? {
            transaction?.action
        }

        /// The recorded state of the store registered under `identifier`, if the entry has it.
        ///
        /// - Parameter identifier: The store's identifier.
        /// - Returns: Its state at the time of the entry.
        public func state(of identifier: String) -> (any StateType)? {
            snapshots.first { $0.storeIdentifier == identifier }?.state
        }
    }

    /// The most entries the history keeps; older ones are dropped.
    public let limit: Int
    private let isRecorded: @Sendable (Transaction) -> Bool
    private let groupKey: (@Sendable (Transaction) -> (any Hashable & Sendable)?)?
    private let lock = Lock()
    // Guarded by `lock`.
    private weak var dispatcher: Dispatcher?
    private var history: Ring<Entry>
    private var current = 0
    private var nextEntryID = 0
    /// Incremented by every move: entries taken before the latest move are not merged into.
    private var epoch = 0
    private var listeners: [UInt64: @Sendable () -> Void] = [:]
    /// The open groups and the ended ones still waiting for transactions, by group number.
    private var groups: [Int: GroupState] = [:]
    private var nextGroupNumber = 0
    /// The group of each included transaction that has not finished yet.
    private var pendingMembers: [UInt64: Int] = [:]
    /// The ids of the latest finished transactions, so that including one that finished without
    /// making an entry does not wait for it forever.
    private var recentlyFinished = Ring<UInt64>(capacity: 1024)

    /// What the recorder knows of one ``Group``.
    private struct GroupState {
        /// The id of the entry holding the group's current step, if it has one.
        var entryID: Int?
        /// Included transactions that have not finished yet.
        var pending: Set<UInt64> = []
        /// Whether ``Group/end()`` was called.
        var ended = false
    }

    /// Creates a recorder.
    ///
    /// ```swift
    /// let recorder = RecorderMiddleware(limit: 500)
    /// ```
    ///
    /// A large limit costs nothing up front: the history grows as entries come, up to the limit.
    ///
    /// - Parameters:
    ///   - limit: The most entries to keep, counting the first; any value from 1 to `Int.max`.
    ///   - isRecorded: Which finished transactions make an entry; all of them by default. Use it to
    ///     leave out actions that only move a selection, for example.
    ///   - groupKey: A key for each recorded transaction, or `nil` (the default) for none. Consecutive
    ///     recorded transactions with the same non-`nil` key make one entry holding the states after
    ///     the latest of them (redux-undo's `groupBy`); a transaction with another key or no key
    ///     starts a new entry, and so does the first transaction after a move. Called once per
    ///     recorded transaction, outside the recorder's lock, on the thread that finished it.
    /// - Precondition: `limit` is at least 1. A smaller limit stops the program with a message that
    ///   names it: the first entry always exists, so a history of no entries cannot be kept, and
    ///   silently keeping one entry would hide the mistake.
    public init(
        limit: Int = 500,
        recording isRecorded: @escaping @Sendable (Transaction) -> Bool = { _ in true },
        groupingBy groupKey: (@Sendable (Transaction) -> (any Hashable & Sendable)?)? = nil
    ) {
        precondition(
            limit >= 1,
            "RecorderMiddleware(limit: \(limit)): the limit must be at least 1, since it counts entry 0 "
                + "(the states when the recorder is registered); pass a positive limit such as 500"
        )
        self.limit = limit
        self.isRecorded = isRecorded
        self.groupKey = groupKey
        self.history = Ring(capacity: limit)
    }

    // MARK: Reading the history

    /// The entries, oldest first.
    public var entries: [Entry] {
        lock.withLock { history.elements }
    }

    /// How many entries the history holds.
    public var count: Int {
        lock.withLock { history.count }
    }

    /// The index in ``entries`` of the entry the stores were last set to or recorded at.
    public var position: Int {
        lock.withLock { current }
    }

    /// The entry at ``position``, or `nil` before the recorder is registered.
    public var currentEntry: Entry? {
        lock.withLock { history.count > 0 ? history[current] : nil }
    }

    /// Whether ``previous()`` has an entry to go back to.
    public var canGoBack: Bool {
        lock.withLock { current > 0 }
    }

    /// Whether ``next()`` has an entry to go forward to.
    public var canGoForward: Bool {
        lock.withLock { current + 1 < history.count }
    }

    // MARK: Moving

    /// Sets every store to the entry before ``position``.
    ///
    /// - Returns: `true` when the stores were restored (and their observers called); `false` at the
    ///   oldest entry, when not registered with a dispatcher, or when called from inside a store's
    ///   `updateState` or `reduce`.
    @discardableResult
    public func previous() -> Bool {
        (try? move { current in current - 1 }) != nil
    }

    /// Sets every store to the entry after ``position``.
    ///
    /// - Returns: `true` when the stores were restored (and their observers called); `false` at the
    ///   newest entry, when not registered with a dispatcher, or when called from inside a store's
    ///   `updateState` or `reduce`.
    @discardableResult
    public func next() -> Bool {
        (try? move { current in current + 1 }) != nil
    }

    /// Sets every store to the entry at `position` (an index in ``entries``).
    ///
    /// - Parameter position: The index of the entry, from 0 to `count - 1`. Any other value,
    ///   `Int.min` and `Int.max` included, is rejected with an error.
    /// - Throws: ``DispatchError`` with code ``DispatchError/Code/historyPositionOutOfRange`` (naming
    ///   the position and the valid range), ``DispatchError/Code/recorderDetached`` or
    ///   ``DispatchError/Code/reentrantRestore``.
    public func jump(to position: Int) throws {
        try move { _ in position }
    }

    /// Moves to the position `destination` computes from the current one, under the lock.
    ///
    /// `destination` gets a position inside the history, so `current ± 1` cannot overflow.
    private func move(to destination: (Int) -> Int) throws {
        // Observers are called after the lock is released: they may read or move the recorder.
        let restored: [any StoreEntry] = try lock.withLock {
            guard let dispatcher else {
                throw DispatchError(
                    .recorderDetached,
                    "the recorder is not registered with a dispatcher; register it with register(middleware:)"
                )
            }
            let destination = destination(current)
            guard destination >= 0 && destination < history.count else {
                throw DispatchError(
                    .historyPositionOutOfRange,
                    "history position \(destination) is out of range 0...\(history.count - 1)"
                )
            }
            guard let restored = dispatcher.restore(history[destination].snapshots) else {
                throw DispatchError(
                    .reentrantRestore,
                    "the recorder cannot restore from inside a store's updateState or reduce(_:into:)"
                )
            }
            current = destination
            // A move ends every run of a group key and every group's current step.
            epoch += 1
            return restored
        }
        for store in restored {
            store.deliverPendingChanges()
        }
        notifyListeners()
    }

    // MARK: Groups

    /// An undo step made of several transactions: the ones you include make one history entry.
    ///
    /// Create one with ``RecorderMiddleware/beginGroup()`` or ``RecorderMiddleware/group(_:)``, and
    /// include each transaction of the gesture, as returned by `dispatch` or carried by the result
    /// of `perform`:
    ///
    /// ```swift
    /// recorder.group { gesture in
    ///     gesture.include(dispatcher.dispatch(TodoAction.delete(id)))
    ///     gesture.include(dispatcher.dispatch(SelectionAction.down, mode: .serial))
    /// }
    /// recorder.previous()  // undoes both
    /// ```
    ///
    /// Membership is by transaction, not by time: a transaction belongs to the group whether it
    /// finished before ``include(_:)`` (a `.sync` dispatch) or finishes on another thread after the
    /// group ended (an `.async` one), and a transaction of some other code that finishes meanwhile
    /// does not. The group's entry holds the states after the latest of its transactions to finish;
    /// each one that finishes later replaces them. When transactions that are not in the group are
    /// recorded between two of its transactions, the group's step moves past them and becomes the
    /// newest entry (their entries then hold the gesture's partial states, as they were taken).
    ///
    /// A move through the history (``RecorderMiddleware/previous()``, ``RecorderMiddleware/next()``,
    /// ``RecorderMiddleware/jump(to:)``) ends the group's current step: its transactions that finish
    /// after the move make a new entry together. Transactions the recorder does not record (left
    /// out by `recording:`, or handled by no store) are ignored.
    ///
    /// - Note: Thread-safe: include transactions from any thread. The group ends when you call
    ///   ``end()`` or release it; transactions included before that still join it when they finish.
    public final class Group: Sendable {
        private let recorder: RecorderMiddleware
        private let number: Int

        fileprivate init(recorder: RecorderMiddleware, number: Int) {
            self.recorder = recorder
            self.number = number
        }

        deinit {
            recorder.endGroup(number)
        }

        /// Makes `transaction` part of the group's undo step.
        ///
        /// Call it right after the dispatch that returned the transaction (`include(dispatcher.dispatch(...))`),
        /// or with `result.transaction` after `perform`. Including a transaction twice, or in a
        /// second group, does nothing more.
        ///
        /// - Parameter transaction: A transaction of the dispatcher the recorder records, finished
        ///   or not.
        /// - Note: Does nothing after ``end()``. Safe from any thread; listeners of the recorder are
        ///   called when the history changes, on the calling thread.
        public func include(_ transaction: Transaction) {
            recorder.include(transaction, inGroup: number)
        }

        /// Ends the group: later ``include(_:)`` calls do nothing.
        ///
        /// Transactions included before still join the group's step when they finish. Calling it
        /// again does nothing; releasing the group ends it too.
        ///
        /// - Note: Safe from any thread.
        public func end() {
            recorder.endGroup(number)
        }

        /// Whether ``end()`` was called.
        public var isEnded: Bool {
            recorder.isGroupEnded(number)
        }
    }

    /// Starts a group: the transactions included in it make one history entry.
    ///
    /// ```swift
    /// let gesture = recorder.beginGroup()
    /// gesture.include(dispatcher.dispatch(TodoAction.delete(id)))
    /// gesture.include(dispatcher.dispatch(SelectionAction.down))
    /// gesture.end()
    /// ```
    ///
    /// - Returns: The group; call ``Group/end()`` when the gesture is over (releasing it ends it too).
    /// - Note: Safe from any thread. Groups are independent of each other and of `groupingBy:`; do
    ///   not include a transaction whose key `groupingBy:` merges with others.
    public func beginGroup() -> Group {
        let number: Int = lock.withLock {
            nextGroupNumber += 1
            groups[nextGroupNumber] = GroupState()
            return nextGroupNumber
        }
        return Group(recorder: self, number: number)
    }

    /// Runs `body` with a new group and ends the group when `body` returns or throws.
    ///
    /// ```swift
    /// recorder.group { gesture in
    ///     gesture.include(dispatcher.dispatch(TodoAction.delete(id), mode: .sync))
    ///     gesture.include(dispatcher.dispatch(SelectionAction.down, mode: .sync))
    /// }
    /// ```
    ///
    /// Transactions included in `body` join the group's step even when they finish after `body`
    /// returned.
    ///
    /// - Parameter body: The gesture: dispatch and include its transactions.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    /// - Note: Safe from any thread; `body` runs on the calling thread.
    public func group<Result>(_ body: (Group) throws -> Result) rethrows -> Result {
        let group = beginGroup()
        defer { group.end() }
        return try body(group)
    }

    private func include(_ transaction: Transaction, inGroup number: Int) {
        let changed: Bool = lock.withLock {
            guard let state = groups[number], !state.ended, pendingMembers[transaction.id] == nil else {
                return false
            }
            if let index = history.lastIndex(where: { $0.transaction?.id == transaction.id }) {
                return joinLocked(entryAt: index, group: number)
            }
            if recentlyFinished.lastIndex(where: { $0 == transaction.id }) != nil {
                // It finished without making an entry (or its entry is gone): nothing to group.
                return false
            }
            pendingMembers[transaction.id] = number
            groups[number]?.pending.insert(transaction.id)
            return false
        }
        if changed { notifyListeners() }
    }

    /// Makes the recorded entry at `index`, of a transaction that finished before it was included,
    /// part of group `number`'s step.
    ///
    /// - Returns: Whether the history changed.
    private func joinLocked(entryAt index: Int, group number: Int) -> Bool {
        let entry = history[index]
        guard entry.group == nil, entry.epoch == epoch else { return false }
        guard let stepIndex = stepIndexLocked(of: number) else {
            history[index] = entry.with(group: number)
            groups[number]?.entryID = entry.id
            return true
        }
        // Two entries of the group: the newer one holds the step, the older one goes.
        let (older, newer) = stepIndex < index ? (stepIndex, index) : (index, stepIndex)
        let count = history[older].transactionCount + history[newer].transactionCount
        history[newer] = history[newer].with(group: number, transactionCount: count)
        removeLocked(at: older)
        groups[number]?.entryID = history[newer - 1].id
        return true
    }

    /// The index of the entry holding group `number`'s current step, if it still has one.
    private func stepIndexLocked(of number: Int) -> Int? {
        guard let id = groups[number]?.entryID,
            let index = history.lastIndex(where: { $0.id == id }),
            history[index].epoch == epoch
        else { return nil }
        return index
    }

    /// Removes the entry at `index`, which is below `current`.
    private func removeLocked(at index: Int) {
        precondition(index < current, "recorder removing entry \(index) at or after the position \(current)")
        history.remove(at: index)
        current -= 1
    }

    private func endGroup(_ number: Int) {
        lock.withLock {
            groups[number]?.ended = true
            forgetGroupIfDoneLocked(number)
        }
    }

    private func isGroupEnded(_ number: Int) -> Bool {
        lock.withLock { groups[number]?.ended ?? true }
    }

    private func forgetGroupIfDoneLocked(_ number: Int) {
        if let state = groups[number], state.ended, state.pending.isEmpty {
            groups[number] = nil
        }
    }

    // MARK: Listening

    /// Calls `callback` after each change of the history or of the position.
    ///
    /// - Parameter callback: Called outside the recorder's lock, on the thread that made the change.
    /// - Returns: The subscription; the calls stop when it is released or cancelled.
    public func subscribe(_ callback: @escaping @Sendable () -> Void) -> Subscription {
        let id = nextSubscriptionID()
        lock.withLock { listeners[id] = callback }
        return Subscription(
            Cancellation { [weak self] in self?.lock.withLock { _ = self?.listeners.removeValue(forKey: id) } }
        )
    }

    private func notifyListeners() {
        let callbacks = lock.withLock { Array(listeners.values) }
        for callback in callbacks {
            callback()
        }
    }

    // MARK: Middleware

    /// Does nothing: the recorder records transactions when they finish.
    public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    /// Does nothing: the recorder records transactions when they finish.
    public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    /// Records entry 0 when first registered with a dispatcher.
    ///
    /// - Parameter dispatcher: The dispatcher the recorder was registered with.
    public func didAttach(to dispatcher: Dispatcher) {
        let recorded: Bool = lock.withLock {
            guard self.dispatcher == nil else { return false }
            self.dispatcher = dispatcher
            guard history.count == 0, let snapshots = dispatcher.consistentCut() else { return false }
            appendLocked(transaction: nil, snapshots: snapshots, groupKey: nil, group: nil, transactionCount: 0)
            return true
        }
        if recorded { notifyListeners() }
    }

    /// Stops recording `dispatcher`; the history is kept.
    ///
    /// - Parameter dispatcher: The dispatcher the recorder was removed from.
    public func didDetach(from dispatcher: Dispatcher) {
        lock.withLock {
            if self.dispatcher === dispatcher { self.dispatcher = nil }
        }
    }

    /// Adds the new store's current state to the entries taken before it was registered.
    ///
    /// - Parameters:
    ///   - store: The new store.
    ///   - dispatcher: The dispatcher it was registered with.
    public func didRegister(store: any AnyStore, in dispatcher: Dispatcher) {
        lock.withLock {
            guard self.dispatcher === dispatcher else { return }
            let snapshot = StoreSnapshot(
                storeIdentifier: store.identifier,
                state: store.anyState,
                sequenceNumber: (store as? any StoreEntry)?.sequenceNumber ?? 0
            )
            for index in 0..<history.count where history[index].state(of: store.identifier) == nil {
                history[index].snapshots.append(snapshot)
            }
        }
    }

    /// Records an entry for a finished transaction that reached at least one store, or merges it
    /// into the entry of its group or of its group key.
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let transaction = result.transaction
        // The user's closures run outside the lock.
        let recorded = !result.isUnhandled && isRecorded(transaction)
        let key = recorded ? groupKey?(transaction) : nil
        let changed: Bool = lock.withLock {
            guard self.dispatcher === dispatcher else { return false }
            recentlyFinished.append(transaction.id)
            let group = pendingMembers.removeValue(forKey: transaction.id)
            defer {
                if let group {
                    groups[group]?.pending.remove(transaction.id)
                    forgetGroupIfDoneLocked(group)
                }
            }
            guard recorded, let snapshots = dispatcher.consistentCut() else { return false }
            recordLocked(transaction, snapshots: snapshots, groupKey: key, group: group)
            return true
        }
        if changed { notifyListeners() }
    }

    /// Records a finished transaction: merged into its group's step or its key's run when there is
    /// one to merge into, a new entry otherwise.
    private func recordLocked(
        _ transaction: Transaction,
        snapshots: [StoreSnapshot],
        groupKey key: (any Hashable & Sendable)?,
        group: Int?
    ) {
        if let group {
            guard let stepIndex = stepIndexLocked(of: group) else {
                appendLocked(
                    transaction: transaction,
                    snapshots: snapshots,
                    groupKey: nil,
                    group: group,
                    transactionCount: 1
                )
                groups[group]?.entryID = history[current].id
                return
            }
            let count = history[stepIndex].transactionCount + 1
            if stepIndex == history.count - 1 {
                // The step is the newest entry: its states are replaced in place.
                history[stepIndex] = Entry(
                    id: history[stepIndex].id,
                    transaction: transaction,
                    date: Date(),
                    snapshots: snapshots,
                    groupKey: nil,
                    transactionCount: count,
                    epoch: epoch,
                    group: group
                )
            } else {
                // Other transactions were recorded since: the step moves past them.
                appendLocked(
                    transaction: transaction,
                    snapshots: snapshots,
                    groupKey: nil,
                    group: group,
                    transactionCount: count
                )
                removeLocked(at: stepIndex)
                groups[group]?.entryID = history[current].id
            }
            return
        }
        if let key, history.count > 0 {
            let newest = history[history.count - 1]
            if let newestKey = newest.groupKey, AnyHashable(newestKey) == AnyHashable(key), newest.group == nil,
                newest.epoch == epoch, current == history.count - 1
            {
                history[history.count - 1] = Entry(
                    id: newest.id,
                    transaction: transaction,
                    date: Date(),
                    snapshots: snapshots,
                    groupKey: key,
                    transactionCount: newest.transactionCount + 1,
                    epoch: epoch,
                    group: nil
                )
                return
            }
        }
        appendLocked(transaction: transaction, snapshots: snapshots, groupKey: key, group: nil, transactionCount: 1)
    }

    /// Drops the redo tail, appends an entry (dropping the oldest when full) and moves to it.
    private func appendLocked(
        transaction: Transaction?,
        snapshots: [StoreSnapshot],
        groupKey: (any Hashable & Sendable)?,
        group: Int?,
        transactionCount: Int
    ) {
        if history.count > 0 {
            history.removeLast(history.count - 1 - current)
        }
        history.append(
            Entry(
                id: nextEntryID,
                transaction: transaction,
                date: Date(),
                snapshots: snapshots,
                groupKey: groupKey,
                transactionCount: transactionCount,
                epoch: epoch,
                group: group
            )
        )
        nextEntryID += 1
        current = history.count - 1
    }
}

extension RecorderMiddleware.Entry {
    /// The same entry, as the step of group `group` standing for `transactionCount` transactions.
    fileprivate func with(group: Int, transactionCount: Int? = nil) -> Self {
        Self(
            id: id,
            transaction: transaction,
            date: date,
            snapshots: snapshots,
            groupKey: nil,
            transactionCount: transactionCount ?? self.transactionCount,
            epoch: epoch,
            group: group
        )
    }
}
