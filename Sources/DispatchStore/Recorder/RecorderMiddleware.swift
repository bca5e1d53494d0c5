import Foundation

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
public final class RecorderMiddleware: Middleware {
    /// The most entries the history keeps; older ones are dropped.
    public let limit: Int
    private let isRecorded: @Sendable (Transaction) -> Bool
    private let groupKey: (@Sendable (Transaction) -> (any Hashable & Sendable)?)?
    /// Everything that changes, behind one lock.
    ///
    /// The user's closures and the listeners are called outside it.
    let state: LockedBox<State>

    /// What the recorder's lock guards.
    struct State: Sendable {
        /// The dispatcher recorded, until the recorder is unregistered from it.
        weak var dispatcher: Dispatcher?
        /// The entries, the position, and the groups.
        var history: RecorderHistory
        /// The callbacks of ``RecorderMiddleware/subscribe(_:)``, by subscription id.
        var listeners: [UInt64: @Sendable () -> Void] = [:]
    }

    /// Creates a recorder with a limit written in the code.
    ///
    /// ```swift
    /// let recorder = RecorderMiddleware(limit: 500)
    /// ```
    ///
    /// A large limit costs nothing up front: the history grows as entries come, up to the limit.
    /// For a limit that comes from configuration at run time, use
    /// ``init(validatingLimit:recording:groupingBy:)``, which throws instead of stopping the program.
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
    ///   names it, as `Array(repeating:count:)` does with a negative count: the first entry always
    ///   exists, so a history of no entries cannot be kept, and silently keeping one entry would hide
    ///   the mistake.
    public init(
        limit: Int = 500,
        recording isRecorded: @escaping @Sendable (Transaction) -> Bool = { _ in true },
        groupingBy groupKey: (@Sendable (Transaction) -> (any Hashable & Sendable)?)? = nil
    ) {
        // A limit below 1 here is a mistake in the code, such as a literal 0, not in the program's
        // input: stopping with a message that names it finds it on the first run, where a recorder
        // that recorded nothing, or one entry, would hide it until someone pressed undo. The
        // throwing initializer is the way in for limits read at run time.
        precondition(
            limit >= 1,
            "RecorderMiddleware(limit: \(limit)): the limit must be at least 1, since it counts entry 0 "
                + "(the states when the recorder is registered); pass a positive limit such as 500, or "
                + "use RecorderMiddleware(validatingLimit:) for a limit read at run time"
        )
        self.limit = limit
        self.isRecorded = isRecorded
        self.groupKey = groupKey
        self.state = LockedBox(State(history: RecorderHistory(limit: limit)))
    }

    /// Creates a recorder with a limit that comes from configuration, checking it.
    ///
    /// ```swift
    /// let recorder = try RecorderMiddleware(validatingLimit: settings.undoSteps)
    /// ```
    ///
    /// The same as ``init(limit:recording:groupingBy:)``, except that a limit below 1 is reported
    /// with an error instead of stopping the program.
    ///
    /// - Parameters:
    ///   - limit: The most entries to keep, counting the first; any value from 1 to `Int.max` is
    ///     accepted, and none is allocated up front.
    ///   - isRecorded: Which finished transactions make an entry; all of them by default.
    ///   - groupKey: A key for each recorded transaction, or `nil` (the default) for none; see
    ///     ``init(limit:recording:groupingBy:)``.
    /// - Throws: ``DispatchError`` with code ``DispatchError/Code/invalidHistoryLimit``, whose message
    ///   names the limit, when `limit` is below 1.
    public convenience init(
        validatingLimit limit: Int,
        recording isRecorded: @escaping @Sendable (Transaction) -> Bool = { _ in true },
        groupingBy groupKey: (@Sendable (Transaction) -> (any Hashable & Sendable)?)? = nil
    ) throws(DispatchError) {
        guard limit >= 1 else { throw DispatchError.invalidHistoryLimit(limit) }
        self.init(limit: limit, recording: isRecorded, groupingBy: groupKey)
    }

    // MARK: Reading the history

    /// The entries, oldest first.
    public var entries: [Entry] {
        state.withLockedValue { $0.history.entries }
    }

    /// How many entries the history holds.
    public var count: Int {
        state.withLockedValue { $0.history.count }
    }

    /// The index in ``entries`` of the entry the stores were last set to or recorded at.
    public var position: Int {
        state.withLockedValue { $0.history.position }
    }

    /// The entry at ``position``, or `nil` before the recorder is registered.
    public var currentEntry: Entry? {
        state.withLockedValue { $0.history.currentEntry }
    }

    /// Whether ``previous()`` has an entry to go back to.
    public var canGoBack: Bool {
        state.withLockedValue { $0.history.canGoBack }
    }

    /// Whether ``next()`` has an entry to go forward to.
    public var canGoForward: Bool {
        state.withLockedValue { $0.history.canGoForward }
    }

    // MARK: Moving

    /// Sets every store to the entry before ``position``.
    ///
    /// - Returns: `true` when the stores were restored (and their observers called); `false` at the
    ///   oldest entry, when not registered with a dispatcher, when called from inside a store's
    ///   `updateState` or `reduce`, or when a store refuses changes made outside its actions
    ///   (as a replicated store does).
    /// - Complexity: O(*n* + *m*), where *n* is the number of the dispatcher's stores (all are locked
    ///   and set at one instant) and *m* the number of observers of the stores that change (each
    ///   called once); the length of the history does not count.
    @discardableResult
    public func previous() -> Bool {
        (try? move(.back)) != nil
    }

    /// Sets every store to the entry after ``position``.
    ///
    /// - Returns: `true` when the stores were restored (and their observers called); `false` at the
    ///   newest entry, when not registered with a dispatcher, when called from inside a store's
    ///   `updateState` or `reduce`, or when a store refuses changes made outside its actions
    ///   (as a replicated store does).
    /// - Complexity: O(*n* + *m*), where *n* is the number of the dispatcher's stores (all are locked
    ///   and set at one instant) and *m* the number of observers of the stores that change (each
    ///   called once); the length of the history does not count.
    @discardableResult
    public func next() -> Bool {
        (try? move(.forward)) != nil
    }

    /// Sets every store to the entry at `position` (an index in ``entries``).
    ///
    /// - Parameter position: The index of the entry, from 0 to `count - 1`. Any other value,
    ///   `Int.min` and `Int.max` included, is rejected with an error.
    /// - Throws: ``DispatchError`` with code ``DispatchError/Code/historyPositionOutOfRange`` (naming
    ///   the position and the valid range), ``DispatchError/Code/recorderDetached``,
    ///   ``DispatchError/Code/reentrantRestore``, or ``DispatchError/Code/outsideChangeRefused``
    ///   (naming the store) when a store refuses changes made outside its actions.
    /// - Complexity: O(*n* + *m*), where *n* is the number of the dispatcher's stores (all are locked
    ///   and set at one instant) and *m* the number of observers of the stores that change (each
    ///   called once); the length of the history does not count.
    public func jump(to position: Int) throws {
        try move(.to(position))
    }

    /// Restores the entry `move` leads to, under the lock, then delivers the changes and tells the
    /// listeners outside it.
    private func move(_ move: RecorderHistory.Move) throws {
        // Observers are called after the lock is released: they may read or move the recorder.
        let restored: [any StoreEntry] = try state.withLockedValue { state in
            guard let dispatcher = state.dispatcher else {
                throw DispatchError(
                    .recorderDetached,
                    "The recorder is not registered with a dispatcher, so it has no stores to restore; register it "
                        + "with register(middleware:) first."
                )
            }
            let destination = try state.history.destination(of: move)
            switch dispatcher.restore(state.history.entry(at: destination).snapshots) {
            case .restored(let restored):
                state.history.moved(to: destination)
                return restored
            case .reentrant:
                throw DispatchError(
                    .reentrantRestore,
                    "The recorder cannot restore the stores from inside a store's updateState or "
                        + "reduce(_:into:); move through the history after the update instead."
                )
            case .refused(let identifier, let reason):
                throw DispatchError(
                    .outsideChangeRefused,
                    "The recorder cannot restore the stores: store '\(identifier)' refuses changes made outside its "
                        + "actions (\(reason)); no store was changed.",
                    storeIdentifier: identifier
                )
            }
        }
        for store in restored {
            store.deliverPendingChanges()
        }
        notifyListeners()
    }

    // MARK: Listening

    /// Calls `callback` after each change of the history or of the position.
    ///
    /// - Parameter callback: Called outside the recorder's lock, on the thread that made the change.
    /// - Returns: The subscription; the calls stop when it is released or cancelled.
    public func subscribe(_ callback: @escaping @Sendable () -> Void) -> Subscription {
        let id = nextSubscriptionID()
        state.withLockedValue { $0.listeners[id] = callback }
        return Subscription(
            Cancellation { [weak self] in self?.state.withLockedValue { _ = $0.listeners.removeValue(forKey: id) } }
        )
    }

    /// Calls every listener, outside the lock.
    func notifyListeners() {
        let callbacks = state.withLockedValue { Array($0.listeners.values) }
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
        let recorded = state.withLockedValue { state in
            guard state.dispatcher == nil else { return false }
            state.dispatcher = dispatcher
            guard state.history.count == 0, let snapshots = dispatcher.consistentCut() else { return false }
            state.history.recordStart(snapshots, at: Date())
            return true
        }
        if recorded { notifyListeners() }
    }

    /// Stops recording `dispatcher`; the history is kept.
    ///
    /// - Parameter dispatcher: The dispatcher the recorder was removed from.
    public func didDetach(from dispatcher: Dispatcher) {
        state.withLockedValue { state in
            if state.dispatcher === dispatcher { state.dispatcher = nil }
        }
    }

    /// Adds the new store's current state to the entries taken before it was registered.
    ///
    /// - Parameters:
    ///   - store: The new store.
    ///   - dispatcher: The dispatcher it was registered with.
    public func didRegister(store: any AnyStore, in dispatcher: Dispatcher) {
        state.withLockedValue { state in
            guard state.dispatcher === dispatcher else { return }
            state.history.backfill(
                StoreSnapshot(
                    storeIdentifier: store.identifier,
                    state: store.anyState,
                    sequenceNumber: (store as? any StoreEntry)?.sequenceNumber ?? 0
                )
            )
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
        let changed = state.withLockedValue { state in
            guard state.dispatcher === dispatcher else { return false }
            // The cut is taken under the recorder's lock, so that entries follow the order of their cuts.
            let snapshots = recorded ? dispatcher.consistentCut() : nil
            return state.history.finish(transaction, snapshots: snapshots, groupKey: key, at: Date())
        }
        if changed { notifyListeners() }
    }
}
