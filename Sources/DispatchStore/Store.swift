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
    private let contextKey = ThreadContext.Key.shared
    private let deliveryLock = Lock(.recursive)
    private let cursor = DeliveryCursor<State, Action>()

    /// The state, guarded by `lock`.
    ///
    /// Behind a pointer so that mutating it skips the dynamic exclusivity check, which the lock
    /// makes redundant.
    private let storage: UnsafeMutablePointer<State>
    // Guarded by `lock`, which makes the dynamic exclusivity check redundant.
    @exclusivity(unchecked) private var operationsInFlight = 0
    @exclusivity(unchecked) private var observerSet = ObserverSet()
    private let pendingChanges = FIFO<StateChange<State, Action>>()
    @exclusivity(unchecked) private var inlineMarker: ActionOperation<State, Action>?
    @exclusivity(unchecked) private var owner: ObjectIdentifier?
    /// Ends the state streams (`states(bufferingNewest:)`), by subscription id.
    @exclusivity(unchecked) private var streamEnds: [UInt64: @Sendable () -> Void] = [:]

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
        self.sequence = nextStoreSequence()
    }

    deinit {
        for end in streamEnds.values {
            end()
        }
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// A snapshot of the current state, read under the store's lock.
    ///
    /// - Note: Safe from any thread. Not from inside this store's own ``updateState(_:)`` closure or
    ///   `reduce(_:into:)`: use the `inout` state there.
    public var state: State {
        guard lock.lockUnlessOwned() else { reentrantAccess("read its state") }
        defer { lock.unlock() }
        return storage.pointee
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
            result = try body(&storage.pointee)
        } catch {
            let queued = queueUpdateIfObservedLocked()
            lock.unlock()
            if queued { deliverPendingChanges() }
            throw error
        }
        let queued = queueUpdateIfObservedLocked()
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

    /// Queues the current state for the observers, if any, with the action that produced it; call
    /// with `lock` held.
    ///
    /// - Returns: Whether a change was queued.
    @inline(__always)
    private func queueChangeIfObservedLocked(action: Action) -> Bool {
        guard !observerSet.isEmpty else { return false }
        queueChangeLocked(action: action)
        return true
    }

    /// Queues the current state for the observers, if any, for an update made outside any
    /// operation (one made during an operation belongs to it and is reported when it finishes);
    /// call with `lock` held.
    ///
    /// - Returns: Whether a change was queued.
    @inline(__always)
    private func queueUpdateIfObservedLocked() -> Bool {
        guard !observerSet.isEmpty, operationsInFlight == 0 else { return false }
        queueChangeLocked(action: nil)
        return true
    }

    /// Appends the current state to the changes waiting for delivery; call with `lock` held.
    ///
    /// Out of line, with the action passed by pointer: generic types built from `State` and
    /// `Action` (`Optional<Action>`, `StateChange`) make unspecialised code look up their metadata at
    /// run time, and that cost should fall only on stores with observers.
    @inline(never)
    private func queueChangeLocked(action: UnsafePointer<Action>?) {
        pendingChanges.append(StateChange(state: storage.pointee, action: action?.pointee))
    }

    @inline(__always)
    private func queueChangeLocked(action: Action) {
        withUnsafePointer(to: action) { queueChangeLocked(action: $0) }
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
        if cursor.position.pointee.sawReleasedObserver {
            cursor.position.pointee.sawReleasedObserver = false
            lock.withLock {
                if let smaller = observerSet.removing(where: { $0.isBoundToObject && $0.object == nil }) {
                    observerSet = smaller
                }
            }
        }
    }

    /// Delivers the cursor's change to the subscriptions not called yet.
    ///
    /// A callback may deliver re-entrantly; the cursor then shows what is left (or that a newer
    /// change started).
    private func deliverCurrentChange() {
        guard let change = cursor.change else { return }
        let position = cursor.position
        let generation = position.pointee.generation
        let observers = cursor.observers
        let ranges = cursor.ranges
        withUnsafePointer(to: change.state) { state in
            withUnsafeOptionalPointer(to: change.action) { action in
                observers.unretainedEntries.withUnsafeBufferPointer { entries in
                    while position.pointee.generation == generation, position.pointee.range < ranges.count {
                        let index = position.pointee.index
                        let range = ranges[position.pointee.range]
                        guard index < range.upperBound else {
                            position.pointee.range += 1
                            if position.pointee.range < ranges.count {
                                position.pointee.index = ranges[position.pointee.range].lowerBound
                            }
                            continue
                        }
                        position.pointee.index = index + 1
                        entries[index]._withUnsafeGuaranteedRef { entry in
                            guard !entry.isBoundToObject || entry.object != nil else {
                                position.pointee.sawReleasedObserver = true
                                return
                            }
                            entry.call(state, action)
                        }
                    }
                }
            }
        }
        if position.pointee.generation == generation {
            cursor.finish()
        }
    }

    // MARK: Observer registry

    @usableFromInline
    func addObserver(_ entry: ObserverEntry) {
        lock.withLock { observerSet = observerSet.adding(entry) }
    }

    /// Adds a key-path subscription, joining the group of subscriptions to the same key path.
    ///
    /// - Parameters:
    ///   - id: The subscription's identifier.
    ///   - keyPath: The key path it watches.
    ///   - makeGroup: Creates the group from the current state, when no subscription watches the
    ///     key path yet. Called under the store's lock.
    ///   - makeCall: Creates the subscription's call for the group. Called under the store's lock.
    @usableFromInline
    func addKeyPathObserver(
        id: UInt64,
        keyPath: AnyKeyPath,
        makeGroup: (State) -> KeyPathGroup,
        makeCall: (KeyPathGroup) -> ObserverEntry.Call
    ) {
        lock.withLock {
            let group = observerSet.group(for: keyPath) ?? makeGroup(storage.pointee)
            observerSet = observerSet.adding(ObserverEntry(id: id, object: nil, group: group, call: makeCall(group)))
        }
    }

    /// Ends a subscription (and forgets how to end it, for a state stream).
    @usableFromInline
    func removeSubscription(id: UInt64) {
        lock.withLock {
            if let smaller = observerSet.removing(where: { $0.id == id }) { observerSet = smaller }
            streamEnds[id] = nil
        }
    }

    /// Adds a state stream's subscription: `makeEntry` gets the current state and how many changes
    /// are queued but not delivered yet (which the subscription must skip: they were committed
    /// before it), all read at one instant with the subscription's start.
    ///
    /// - Parameters:
    ///   - id: The subscription's identifier.
    ///   - end: Ends the stream; called when the store is unregistered or released.
    ///   - makeEntry: Creates the subscription. Called under the store's lock.
    func addStream(
        id: UInt64,
        end: @escaping @Sendable () -> Void,
        makeEntry: (_ current: State, _ queued: Int) -> ObserverEntry
    ) {
        lock.withLock {
            observerSet = observerSet.adding(makeEntry(storage.pointee, pendingChanges.count))
            streamEnds[id] = end
        }
    }

    /// Ends every state stream (the store was unregistered).
    func endStateStreams() {
        let ends = lock.withLock {
            defer { streamEnds = [:] }
            return streamEnds
        }
        for end in ends.values {
            end()
        }
    }

    func removeObservers(boundTo object: AnyObject) {
        lock.withLock {
            let bound = { (entry: ObserverEntry) in
                entry.isBoundToObject && (entry.object == nil || entry.object === object)
            }
            if let smaller = observerSet.removing(where: bound) { observerSet = smaller }
        }
    }

    // MARK: Operations run by the dispatcher

    /// Runs `reduce(_:into:)` at once when the dispatcher is asking this store's reducer for an
    /// operation on this thread; called by the default `Reducer.operation(for:in:)`.
    ///
    /// - Returns: The store's already-finished placeholder operation, or `nil` when the call does not
    ///   come from the dispatcher (the caller then builds a real operation).
    func reduceInline(_ action: Action, with reducer: Reducer<State, Action>) -> ActionOperation<State, Action>? {
        let context = ThreadContext.current(key: contextKey)
        guard context.inlineStore == ObjectIdentifier(self) else { return nil }
        guard lock.lockUnlessOwned() else {
            context.inlineResult = .reentrant
            return ActionOperation(placeholderFor: self, action: action)
        }
        reducer.reduce(action, into: &storage.pointee)
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
    func beginStep(
        _ actionPointer: UnsafeRawPointer,
        dependencies: () -> [Operation],
        context: ThreadContext,
        makeFinishHook: () -> StepFinishHook
    ) -> StepStart {
        // The route only holds stores whose `Action` is the dispatched action's type.
        let action = actionPointer.assumingMemoryBound(to: Action.self).pointee
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
                return StepStart(operation: nil, status: .finished, needsDelivery: notified)
            case .reentrant:
                return StepStart(
                    operation: nil,
                    status: .failed(DispatchError.reentrant(identifier)),
                    needsDelivery: false
                )
            case .none:
                return StepStart(operation: nil, status: .finished, needsDelivery: false)
            }
        }
        let notifiedInline: Bool
        if case .reduced(true) = inline { notifiedInline = true } else { notifiedInline = false }

        guard operation.claimForDispatcher() else {
            let error = DispatchError.operationReused(identifier)
            return StepStart(operation: nil, status: .failed(error), needsDelivery: notifiedInline)
        }
        // A custom operation would deadlock in updateState if this thread already holds the lock.
        guard lock.lockUnlessOwned() else {
            return StepStart(operation: nil, status: .failed(DispatchError.reentrant(identifier)), needsDelivery: false)
        }
        operationsInFlight += 1
        lock.unlock()

        for dependency in dependencies() {
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
                return StepStart(operation: operation, status: status, needsDelivery: notified || notifiedInline)
            }
        } else {
            // The reducer gave the operation dependencies of its own; let a queue wait for them.
            OperationQueues.externalDependencies.addOperation(operation)
        }
        return StepStart(operation: operation, status: nil, needsDelivery: true)
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
        storage.pointee
    }

    /// Replaces the state for a caller already holding `lock`; queues a change with a `nil` action.
    ///
    /// - Returns: Whether a change was queued (call `deliverPendingChanges()` after unlocking), or
    ///   `nil` when `state` is not of this store's state type.
    func replaceStateWhileLocked(_ state: any StateType) -> Bool? {
        guard let typed = state as? State else { return nil }
        storage.pointee = typed
        guard !observerSet.isEmpty else { return false }
        queueChangeLocked(action: nil)
        return true
    }
}

private let storeSequence = Locked<UInt64>(0)

private func nextStoreSequence() -> UInt64 {
    storeSequence.withLock { value in
        value += 1
        return value
    }
}

extension Store: StoreEntry {}
