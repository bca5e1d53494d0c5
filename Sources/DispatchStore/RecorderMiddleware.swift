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
/// - Note: Thread-safe; record while dispatches run on other threads. A recorder records the first
///   dispatcher it is registered with, until it is unregistered from it. Do not call it from a
///   reducer's `reduce(_:into:)` or an `updateState` closure (the moves report that as an error).
public final class RecorderMiddleware: Middleware, @unchecked Sendable {
    // @unchecked: every mutable property is guarded by `lock`; callbacks run outside it.

    /// One recorded instant.
    public struct Entry: Sendable, Identifiable {
        /// A number unique in this recorder, 0 for the first entry and one more for each entry after it.
        ///
        /// It does not change when older entries are dropped.
        public let id: Int
        /// The transaction whose end was recorded; `nil` for the first entry.
        public let transaction: Transaction?
        /// When the entry was taken.
        public let date: Date
        /// The states of the stores, in registration order.
        public fileprivate(set) var snapshots: [StoreSnapshot]

        /// The action of the recorded transaction; `nil` for the first entry.
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
    private let lock = Lock()
    // Guarded by `lock`.
    private weak var dispatcher: Dispatcher?
    private var history: Ring<Entry>
    private var current = 0
    private var nextEntryID = 0
    private var listeners: [UInt64: @Sendable () -> Void] = [:]

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
    /// - Precondition: `limit` is at least 1. A smaller limit stops the program with a message that
    ///   names it: the first entry always exists, so a history of no entries cannot be kept, and
    ///   silently keeping one entry would hide the mistake.
    public init(limit: Int = 500, recording isRecorded: @escaping @Sendable (Transaction) -> Bool = { _ in true }) {
        precondition(
            limit >= 1,
            "RecorderMiddleware(limit: \(limit)): the limit must be at least 1, since it counts entry 0 "
                + "(the states when the recorder is registered); pass a positive limit such as 500"
        )
        self.limit = limit
        self.isRecorded = isRecorded
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
            return restored
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
            appendLocked(transaction: nil, snapshots: snapshots)
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
            let snapshot = StoreSnapshot(storeIdentifier: store.identifier, state: store.anyState)
            for index in 0..<history.count where history[index].state(of: store.identifier) == nil {
                history[index].snapshots.append(snapshot)
            }
        }
    }

    /// Records an entry for a finished transaction that reached at least one store.
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        guard !result.isUnhandled, isRecorded(result.transaction) else { return }
        let recorded: Bool = lock.withLock {
            guard self.dispatcher === dispatcher, let snapshots = dispatcher.consistentCut() else { return false }
            appendLocked(transaction: result.transaction, snapshots: snapshots)
            return true
        }
        if recorded { notifyListeners() }
    }

    /// Drops the redo tail, appends an entry (dropping the oldest when full) and moves to it.
    private func appendLocked(transaction: Transaction?, snapshots: [StoreSnapshot]) {
        if history.count > 0 {
            history.removeLast(history.count - 1 - current)
        }
        history.append(Entry(id: nextEntryID, transaction: transaction, date: Date(), snapshots: snapshots))
        nextEntryID += 1
        current = history.count - 1
    }
}
