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
    // @unchecked: every mutable property below is guarded by `lock` (or, for `cursor`, by
    // `deliveryLock`), and callbacks run outside `lock`. The reducer is not Sendable; the store
    // carries the guarantee, and reducers are documented to keep no unsynchronised mutable state.

    /// The identifier the store registers under; unique within a dispatcher.
    public let identifier: String
    /// The identifiers of the stores whose operations must finish before this store's.
    ///
    /// Applies when one action reaches both stores. They need not be registered yet.
    public let waitsFor: [String]
    /// The reducer that turns actions into operations.
    public let reducer: Reducer<State, Action>

    /// Creation order, the canonical order for locking several stores at once.
    let sequence: UInt64
    let lock = Lock(.errorChecking)
    private let deliveryLock = Lock(.recursive)
    private let cursor = DeliveryCursor<State, Action>()

    // Guarded by `lock`.
    private var storage: State
    private var operationsInFlight = 0
    private var observerSet = ObserverSet<State, Action>()
    private var pendingChanges = FIFO<StateChange<State, Action>>()
    private var inlineMarker: ActionOperation<State, Action>?
    private var owner: ObjectIdentifier?

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
        self.storage = initialState
        self.sequence = nextStoreSequence()
    }

    /// A snapshot of the current state, read under the store's lock.
    ///
    /// - Note: Safe from any thread. Not from inside this store's own ``updateState(_:)`` closure or
    ///   `reduce(_:into:)`: use the `inout` state there.
    public var state: State {
        guard lock.lockUnlessOwned() else { reentrantAccess("read its state") }
        defer { lock.unlock() }
        return storage
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
    /// - Parameter body: A closure that changes the state in place. Keep it short and do not touch
    ///   this store from inside it.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the state keeps the changes made before the throw.
    /// - Note: Safe from any thread.
    @discardableResult
    public func updateState<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        guard lock.lockUnlessOwned() else { reentrantAccess("update its state") }
        let result: Result
        do {
            result = try body(&storage)
        } catch {
            let queued = queueChangeIfObservedLocked(action: nil, outsideOperations: true)
            lock.unlock()
            if queued { deliverPendingChanges() }
            throw error
        }
        let queued = queueChangeIfObservedLocked(action: nil, outsideOperations: true)
        lock.unlock()
        if queued { deliverPendingChanges() }
        return result
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

    private func reentrantAccess(_ what: String) -> Never {
        preconditionFailure(
            "DispatchStore: store '\(identifier)' tried to \(what) from inside its own updateState closure "
                + "or reduce(_:into:); use the inout state passed to that closure instead"
        )
    }

    /// Queues the current state for the observers when there are any; call with `lock` held.
    ///
    /// - Parameters:
    ///   - action: The action that produced the state, `nil` outside operations.
    ///   - outsideOperations: Queue only when no operation of this store is in flight (an update made
    ///     during one belongs to it and is reported when it finishes).
    /// - Returns: Whether a change was queued.
    private func queueChangeIfObservedLocked(action: Action?, outsideOperations: Bool = false) -> Bool {
        guard !observerSet.isEmpty, !outsideOperations || operationsInFlight == 0 else { return false }
        pendingChanges.append(StateChange(state: storage, action: action))
        return true
    }

    /// Calls the observers with every queued change, in commit order.
    ///
    /// Waits while another thread delivers this store's changes (then delivers what is left), except
    /// when this thread is itself inside an observer callback: it then leaves the work to the thread
    /// already delivering, which delivers everything queued, so that two threads each delivering one
    /// store and dispatching `.sync` into the other cannot deadlock.
    func deliverPendingChanges() {
        let context = ThreadContext.current
        if context.deliveryDepth == 0 {
            deliveryLock.lock()
        } else if !deliveryLock.tryLock() {
            return
        }
        context.deliveryDepth += 1
        defer {
            context.deliveryDepth -= 1
            deliveryLock.unlock()
        }
        while true {
            if cursor.change == nil {
                lock.lock()
                guard let next = pendingChanges.popFirst() else {
                    lock.unlock()
                    break
                }
                let observers = observerSet
                lock.unlock()
                cursor.start(next, observers: observers)
            }
            deliverCurrentChange()
        }
        if cursor.sawReleasedObserver {
            cursor.sawReleasedObserver = false
            lock.withLock {
                if let smaller = observerSet.removingObservers(where: { $0.isBoundToObject && $0.object == nil }) {
                    observerSet = smaller
                }
            }
        }
    }

    /// Delivers the cursor's change to the observers not called yet.
    ///
    /// A callback may deliver re-entrantly; the cursor then shows what is left (or that a newer
    /// change started).
    private func deliverCurrentChange() {
        guard let change = cursor.change else { return }
        let generation = cursor.generation
        let observers = cursor.set.observers
        while cursor.generation == generation {
            let index = cursor.observerIndex
            guard index < observers.count else { break }
            cursor.observerIndex = index + 1
            if observers[index].isBoundToObject && observers[index].object == nil {
                cursor.sawReleasedObserver = true
                continue
            }
            observers[index].callback(change.state, change.action)
        }
        let changed = cursor.changedKeyPaths
        while cursor.generation == generation {
            let group = cursor.keyPathIndex
            guard group < changed.count else { break }
            let index = cursor.callbackIndex
            if index < changed[group].count {
                cursor.callbackIndex = index + 1
                changed[group].deliver(at: index)
            } else {
                cursor.keyPathIndex = group + 1
                cursor.callbackIndex = 0
            }
        }
        if cursor.generation == generation {
            cursor.change = nil
            cursor.changedKeyPaths = []
        }
    }

    // MARK: Observer registry

    func addObserver(_ observer: StateObserver<State, Action>) {
        lock.withLock { observerSet = observerSet.adding(observer) }
    }

    func addKeyPathSubscription<Value: Equatable>(
        _ keyPath: KeyPath<State, Value>,
        id: UInt64,
        callback: @escaping @Sendable (Value) -> Void
    ) {
        lock.withLock {
            var groups = observerSet.keyPaths
            if let index = groups.firstIndex(where: { $0.keyPath == keyPath }),
                let group = groups[index] as? KeyPathSubscription<State, Value>
            {
                groups[index] = group.adding(id: id, callback: callback)
            } else {
                let delivered = DeliveredValue(storage[keyPath: keyPath])
                groups.append(KeyPathSubscription(path: keyPath, delivered: delivered, callbacks: [(id, callback)]))
            }
            observerSet = observerSet.replacingKeyPaths(groups)
        }
    }

    func removeSubscription(id: UInt64) {
        lock.withLock {
            if let smaller = observerSet.removing(id: id) { observerSet = smaller }
        }
    }

    func removeObservers(boundTo object: AnyObject) {
        lock.withLock {
            if let smaller = observerSet.removingObservers(where: {
                $0.isBoundToObject && ($0.object == nil || $0.object === object)
            }) {
                observerSet = smaller
            }
        }
    }

    // MARK: Operations run by the dispatcher

    /// Runs `reduce(_:into:)` at once when the dispatcher is asking this store's reducer for an
    /// operation on this thread; called by the default `Reducer.operation(for:in:)`.
    ///
    /// - Returns: The store's already-finished placeholder operation, or `nil` when the call does not
    ///   come from the dispatcher (the caller then builds a real operation).
    func reduceInline(_ action: Action, with reducer: Reducer<State, Action>) -> ActionOperation<State, Action>? {
        let context = ThreadContext.current
        guard context.inlineStore == ObjectIdentifier(self) else { return nil }
        guard lock.lockUnlessOwned() else {
            context.inlineResult = .reentrant
            return ActionOperation(placeholderFor: self, action: action)
        }
        reducer.reduce(action, into: &storage)
        let notified = queueChangeIfObservedLocked(action: action)
        let marker: ActionOperation<State, Action>
        if let existing = inlineMarker {
            marker = existing
        } else {
            marker = ActionOperation(placeholderFor: self, action: action)
            inlineMarker = marker
        }
        lock.unlock()
        context.inlineResult = .reduced(notified: notified)
        return marker
    }

    /// Asks the reducer for the operation of one action and starts it; see `ActionReceiver`.
    func beginUnit(
        _ action: Action,
        dependencies: [Operation],
        context: ThreadContext,
        makeFinishHook: () -> UnitFinishHook
    ) -> UnitStart {
        let savedStore = context.inlineStore
        let savedResult = context.inlineResult
        context.inlineStore = ObjectIdentifier(self)
        context.inlineResult = .none
        let operation = reducer.operation(for: action, in: self)
        let inline = context.inlineResult
        context.inlineStore = savedStore
        context.inlineResult = savedResult

        if operation.isPlaceholder {
            switch inline {
            case .reduced(let notified):
                return UnitStart(operation: operation, status: .finished, needsDelivery: notified)
            case .reentrant:
                return UnitStart(
                    operation: nil,
                    status: .failed(DispatchError.reentrant(identifier)),
                    needsDelivery: false
                )
            case .none:
                return UnitStart(operation: operation, status: .finished, needsDelivery: false)
            }
        }
        let notifiedInline: Bool
        if case .reduced(true) = inline { notifiedInline = true } else { notifiedInline = false }

        guard operation.claimForDispatcher() else {
            let error = DispatchError.operationReused(identifier)
            return UnitStart(operation: nil, status: .failed(error), needsDelivery: notifiedInline)
        }
        // A custom operation would deadlock in updateState if this thread already holds the lock.
        guard lock.lockUnlessOwned() else {
            return UnitStart(operation: nil, status: .failed(DispatchError.reentrant(identifier)), needsDelivery: false)
        }
        operationsInFlight += 1
        lock.unlock()

        for dependency in dependencies {
            operation.addDependency(dependency)
        }
        let hook = makeFinishHook()
        operation.setFinishHook { [self] status, ranBody in
            endOperation(action: action, ranBody: ranBody)
            hook(status)
        }
        if operation.isReady {
            if let (status, ranBody) = operation.runInline() {
                let notified = endOperation(action: action, ranBody: ranBody)
                return UnitStart(operation: operation, status: status, needsDelivery: notified || notifiedInline)
            }
        } else {
            // The reducer gave the operation dependencies of its own; let a queue wait for them.
            OperationQueues.externalDependencies.addOperation(operation)
        }
        return UnitStart(operation: operation, status: nil, needsDelivery: true)
    }

    /// Commits the end of one of this store's operations: queues the change for the observers.
    @discardableResult
    private func endOperation(action: Action, ranBody: Bool) -> Bool {
        lock.withLock {
            operationsInFlight -= 1
            return ranBody && queueChangeIfObservedLocked(action: action)
        }
    }

    // MARK: Registration and recorder support

    /// Claims the store for a dispatcher; `false` when another dispatcher holds it.
    func claim(for dispatcher: ObjectIdentifier) -> Bool {
        lock.withLock {
            if let owner, owner != dispatcher { return false }
            owner = dispatcher
            return true
        }
    }

    func release(from dispatcher: ObjectIdentifier) {
        lock.withLock {
            if owner == dispatcher { owner = nil }
        }
    }

    /// The state, for a caller already holding `lock` (a consistent cut across stores).
    var stateWhileLocked: any StateType {
        storage
    }

    /// Replaces the state for a caller already holding `lock`; queues a change with a `nil` action.
    ///
    /// - Returns: Whether a change was queued (call `deliverPendingChanges()` after unlocking), or
    ///   `nil` when `state` is not of this store's state type.
    func replaceStateWhileLocked(_ state: any StateType) -> Bool? {
        guard let typed = state as? State else { return nil }
        storage = typed
        return queueChangeIfObservedLocked(action: nil)
    }
}

private let storeSequence = Locked<UInt64>(0)

private func nextStoreSequence() -> UInt64 {
    storeSequence.withLock { value in
        value += 1
        return value
    }
}
