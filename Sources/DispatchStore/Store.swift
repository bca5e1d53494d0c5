import Foundation

/// A container for one domain's state, changed only by the actions its reducer handles.
///
/// A store has an identifier that is unique within its dispatcher, a `Reducer` that turns each
/// action into an `ActionOperation`, and optionally the identifiers of stores it waits for (Flux's
/// `waitFor`): when one action reaches both, this store's operation starts only after theirs finished.
///
/// ```swift
/// let store = Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer())
/// try dispatcher.register(store: store)
/// dispatcher.dispatch(CounterAction.increase, mode: .sync)
/// print(store.state.count)  // 1
/// ```
///
/// - Note: Thread-safe. The state is read and written only under the store's lock, so ``state``
///   returns a consistent snapshot from any thread and ``updateState(_:)`` is atomic. Observers are
///   called outside the lock, one change at a time, in commit order. Reading or updating a store's
///   state from inside its own ``updateState(_:)`` closure or its reducer's `reduce(_:into:)` is a
///   programming error that stops the program with a message naming the store; a `.sync` dispatch
///   made from there is reported as ``DispatchError/Code/reentrantDispatch`` instead.
public final class Store<State: StateType, Action: ActionType>: AnyStore, CustomStringConvertible, @unchecked Sendable {
    // @unchecked: the state, the pending changes and the bookkeeping are only touched while holding
    // `guarded`'s lock, the delivery cursor only while holding `deliveryLock`; callbacks run outside
    // them. The reducer is not Sendable: the store carries the guarantee, and reducers are
    // documented to keep no unsynchronised mutable state.

    /// The identifier the store registers under; unique within a dispatcher.
    public let identifier: String
    /// The identifiers of the stores whose operations must finish before this store's.
    ///
    /// Applies when one action reaches both stores. They need not be registered yet.
    public let waitsFor: [String]
    /// The reducer that turns actions into operations.
    public let reducer: Reducer<State, Action>

    /// Creation order, the canonical order for locking several stores at once.
    let lockRank: UInt64
    /// The store's lock, with what it guards besides the state.
    ///
    /// Taken through ``lockState(for:)`` or ``lockStateUnlessHeld(context:)`` wherever the calling
    /// thread may be running this store's user code under it: the thread's context tells
    /// (``ThreadContext/holds(_:)``), so that re-entrant access is reported instead of deadlocking.
    package let guarded = LockedBox(StoreBookkeeping(), kind: .plain)
    /// The state, guarded by `guarded`'s lock; behind a pointer, so that mutating it needs no dynamic
    /// exclusivity check and unspecialised code no metadata of a generic wrapper (S1).
    package let storage: UnsafeMutablePointer<State>
    /// The committed states waiting for the observers, in commit order; guarded by `guarded`'s lock.
    let pendingChanges = ChangeQueue<State, Action>()
    /// Where delivery stands, guarded by `deliveryLock`, which is recursive: an observer callback
    /// may deliver again, continuing from the cursor.
    let cursor = DeliveryCursor<State, Action>()
    /// A lock with no value of its own: the cursor lives in its own object, outside the box.
    let deliveryLock = LockedBox((), kind: .recursive)
    /// The store as a run's steps reach it (``StoreHandle``); set once, at the end of `init`, and
    /// kept for the store's life, so that a route that keeps the store may keep the handle unretained.
    private var storedHandle: StoreHandle?

    /// Creates a store.
    ///
    /// - Parameters:
    ///   - identifier: A name unique within the dispatcher the store registers with.
    ///   - reducer: The reducer that turns actions into operations.
    ///   - waitsFor: Identifiers of stores whose operations must finish first when one action
    ///     reaches both. Registration rejects a cycle.
    ///   - initialState: The state to start from; `State()` when omitted.
    public init(
        identifier: String,
        reducer: Reducer<State, Action>,
        waitsFor: [String] = [],
        initialState: State = State()
    ) {
        self.identifier = identifier
        self.reducer = reducer
        self.waitsFor = waitsFor
        self.storage = .allocate(capacity: 1)
        self.storage.initialize(to: initialState)
        self.lockRank = nextLockRank()
        self.storedHandle = TypedStoreHandle(store: self)
    }

    /// The store's handle, not retained: valid while the store is alive.
    var handle: Unmanaged<StoreHandle> {
        Unmanaged.passUnretained(storedHandle.unsafelyUnwrapped)
    }

    deinit {
        let ends = guarded.withLockedValue { bookkeeping in
            defer {
                // Emptied, not only read: a thread's shortcut may keep the lock, and so the
                // bookkeeping, a while; what the observers captured must not live as long.
                if !bookkeeping.observers.isEmpty { bookkeeping.observers = ObserverRegistry() }
                if !bookkeeping.streamEnds.isEmpty { bookkeeping.streamEnds = [:] }
            }
            return bookkeeping.streamEnds
        }
        for end in ends.values {
            end()
        }
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// A snapshot of the current state, read under the store's lock.
    ///
    /// - Note: Safe from any thread. Not from inside this store's own ``updateState(_:)`` closure or
    ///   `reduce(_:into:)`: use the `inout` state there.
    /// - Complexity: O(1) plus a copy of the state: arrays, strings and dictionaries in it are shared,
    ///   not copied (copy-on-write).
    public var state: State {
        lockState(for: "read its state")
        defer { guarded.unlock() }
        return storage.pointee
    }

    /// The sequence number of the last action the store applied: how many actions made its state.
    ///
    /// The store numbers the actions it applies 1, 2, 3, … in the order it applies them; each
    /// dispatch's result tells the number its action got (``StoreOutcome/sequenceNumber``). An
    /// ``updateState(_:)`` outside any operation, and a recorder's restore, change the state without
    /// taking a number.
    ///
    /// - Note: Safe from any thread; read under the store's lock. Not from inside this store's own
    ///   ``updateState(_:)`` closure or `reduce(_:into:)`.
    public var sequenceNumber: UInt64 {
        lockState(for: "read its sequence number")
        defer { guarded.unlock() }
        return withBookkeepingLocked { $0.sequenceNumber }
    }

    /// Mutates the state atomically under the store's lock.
    ///
    /// Called from an operation's body (on any thread, also after the body returned, until the
    /// operation finishes), the change belongs to that operation: observers hear of it once, when
    /// the operation finishes, together with its action. Called outside any operation of this
    /// store, observers are called before this method returns, with a `nil` action.
    ///
    /// ```swift
    /// store.updateState { state in state.count += 1 }
    /// ```
    ///
    /// A store that refuses outside changes (as a replicated store does) accepts this call only while one of its operations runs: called when none runs,
    /// it is a programming error that stops the program with a message naming the store and the
    /// reason, before `body` runs.
    ///
    /// - Parameter body: A closure that changes the state in place. Keep it short and do not touch
    ///   this store from inside it.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the state keeps the changes made before the throw.
    /// - Note: Safe from any thread.
    @discardableResult
    public func updateState<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        let context = ThreadContext.current
        guard lockStateUnlessHeld(context: context) else { reentrantAccess("update its state") }
        if _slowPath(withBookkeepingLocked { $0.outsideChangeRefusal != nil && $0.operationsInFlight == 0 }) {
            refusedUpdate()
        }
        let result: Result
        do {
            context.beginHolding(ObjectIdentifier(self))
            defer { context.endHolding() }
            result = try body(&storage.pointee)
        } catch {
            let queued = queueUpdateIfObservedLocked()
            guarded.unlock()
            if queued { deliverPendingChanges() }
            throw error
        }
        let queued = queueUpdateIfObservedLocked()
        guarded.unlock()
        if queued { deliverPendingChanges() }
        return result
    }

    /// Sets the state and the sequence number together, as recovery from a snapshot does; observers
    /// hear of it with a `nil` action before this returns.
    ///
    /// - Parameters:
    ///   - state: The state to continue from.
    ///   - sequenceNumber: The number of the last action that made it; the next action the store
    ///     applies gets the one after.
    package func restore(state: State, sequenceNumber: UInt64) {
        lockState(for: "restore its state")
        storage.pointee = state
        let observed = withBookkeepingLocked { bookkeeping in
            bookkeeping.sequenceNumber = sequenceNumber
            return !bookkeeping.observers.isEmpty
        }
        if observed { queueChangeLocked(action: nil) }
        guarded.unlock()
        if observed { deliverPendingChanges() }
    }

    /// The identifier and the generic types, for example `Store<Counter, CounterAction>(counter)`.
    public var description: String {
        "Store<\(State.self), \(Action.self)>(\(identifier))"
    }

    // MARK: AnyStore

    /// A snapshot of the current state, read under the store's lock.
    public var anyState: any StateType {
        state
    }

    /// `State.self`.
    public var stateType: any StateType.Type {
        State.self
    }

    /// `Action.self`.
    public var actionType: any ActionType.Type {
        Action.self
    }

    // MARK: Internals

    /// Takes the store's lock unless the calling thread runs this store's user code under it
    /// (`reduce(_:into:)`, an `updateState` closure), where taking it again would deadlock.
    ///
    /// - Returns: `true` once locked; `false`, not locked, for a re-entrant call.
    @inline(__always)
    func lockStateUnlessHeld(context: ThreadContext) -> Bool {
        if context.holds(ObjectIdentifier(self)) { return false }
        guarded.lock()
        return true
    }

    /// Takes the store's lock unless the calling thread runs this store's user code under it, for a
    /// module without the thread's context (the inspector); see `lockStateUnlessHeld(context:)`.
    package func lockStateUnlessHeld() -> Bool {
        lockStateUnlessHeld(context: .current)
    }

    /// Takes the store's lock for `what` a caller does; a re-entrant call (from inside this store's
    /// `reduce(_:into:)` or `updateState` closure) stops the program with a message naming the store.
    package func lockState(for what: String) {
        guard lockStateUnlessHeld(context: .current) else { reentrantAccess(what) }
    }

    /// Stops the program: the calling thread tried `what` from inside the store's own user code.
    package func reentrantAccess(_ what: String) -> Never {
        preconditionFailure(
            "DispatchStore: store '\(identifier)' tried to \(what) from inside its own updateState closure "
                + "or reduce(_:into:); use the inout state passed to that closure instead"
        )
    }

    /// The bookkeeping; call while holding `guarded`'s lock.
    @inline(__always)
    package func withBookkeepingLocked<Result>(_ body: (inout StoreBookkeeping) throws -> Result) rethrows -> Result {
        try body(&guarded.valuePointer.pointee)
    }

    /// Queues the current state for the observers, if any, with the action that produced it; call
    /// with the store's lock held.
    ///
    /// - Returns: Whether a change was queued.
    @inline(__always)
    func queueChangeIfObservedLocked(action: Action) -> Bool {
        guard !withBookkeepingLocked({ $0.observers.isEmpty }) else { return false }
        queueChangeLocked(action: action)
        return true
    }

    /// Queues the current state for the observers, if any, for an update made outside any
    /// operation (one made during an operation belongs to it and is reported when it finishes);
    /// call with the store's lock held.
    ///
    /// - Returns: Whether a change was queued.
    @inline(__always)
    func queueUpdateIfObservedLocked() -> Bool {
        guard withBookkeepingLocked({ !$0.observers.isEmpty && $0.operationsInFlight == 0 }) else { return false }
        queueChangeLocked(action: nil)
        return true
    }

    /// Appends the current state to the changes waiting for delivery; call with the store's lock held.
    ///
    /// Out of line, with the action passed by pointer: only stores with observers pay for it.
    @inline(never)
    func queueChangeLocked(action: UnsafePointer<Action>?) {
        pendingChanges.append(state: storage, action: action)
    }

    @inline(__always)
    func queueChangeLocked(action: Action) {
        withUnsafePointer(to: action) { queueChangeLocked(action: $0) }
    }
}

private let lastLockRank = LockedBox<UInt64>(0)

private func nextLockRank() -> UInt64 {
    lastLockRank.withLockedValue { value in
        value += 1
        return value
    }
}
