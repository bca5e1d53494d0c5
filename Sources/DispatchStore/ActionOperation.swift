public import Foundation

/// The Foundation `Operation` a reducer returns for one action: it runs a body that changes the
/// store's state and calls ``finish()`` when done, now or later from any thread.
///
/// ```swift
/// ActionOperation(action: action, store: store) { operation, action, store in
///     store.updateState { $0.count += 1 }
///     operation.finish()
/// }
/// ```
///
/// The operation is asynchronous: it is finished only when ``finish()`` (or
/// ``finish(throwing:)``) is called, so the body may start work on another queue and finish from
/// there. State changes made with `store.updateState` until then belong to this operation: the
/// store's observers hear of them once, when it finishes. It honours cancellation: cancelled before
/// it starts, its body never runs; a running body can check `isCancelled` and finish early.
/// `finish()` is effective once; later calls return `false` and do nothing.
///
/// Dependencies work as for any `Operation`: the dispatcher adds those of the stores named in
/// `waitsFor`, and a reducer may add its own (the operation then waits on a queue until they finish).
///
/// - Note: Thread-safe; `finish()` and `cancel()` may be called from any thread. Create a new
///   operation for every call of `Reducer.operation(for:in:)`: the dispatcher rejects one that was
///   already started.
public final class ActionOperation<State: StateType, Action: ActionType>: Operation, @unchecked Sendable {
    // @unchecked: Operation is @unchecked Sendable, so subclasses must restate it. Every mutable
    // value is in `lifecycle`, behind its lock; `body` runs once, outside the lock.

    /// The action this operation handles.
    public let action: Action
    /// The store whose state this operation changes.
    public let store: Store<State, Action>
    private let body: (ActionOperation<State, Action>, Action, Store<State, Action>) -> Void

    /// Where the operation stands, behind its lock.
    ///
    /// Not nested in this generic class: a nested
    /// type would be generic too, and unspecialised code would look up its metadata at run time.
    private let lifecycle = LockedBox(OperationLifecycle())

    /// Creates an operation that runs `body` when started.
    ///
    /// - Parameters:
    ///   - action: The action the operation handles.
    ///   - store: The store whose state the body changes.
    ///   - body: The work: change the state with `store.updateState`, then call
    ///     `operation.finish()`, now or later from any thread. Receives the operation, the action and
    ///     the store. Runs at most once, never when the operation was cancelled before starting.
    public init(
        action: Action,
        store: Store<State, Action>,
        body:
            @escaping (
                _ operation: ActionOperation<State, Action>, _ action: Action, _ store: Store<State, Action>
            ) -> Void
    ) {
        self.action = action
        self.store = store
        self.body = body
        super.init()
    }

    /// Always `true`: the operation finishes when ``finish()`` is called, not when its body returns.
    public override var isAsynchronous: Bool {
        true
    }

    /// Whether the body has started and ``finish()`` has not been called yet.
    public override var isExecuting: Bool {
        lifecycle.withLockedValue { $0.phase == .executing || $0.phase == .finishing }
    }

    /// Whether the operation has finished (or was cancelled before it started and then started).
    public override var isFinished: Bool {
        lifecycle.withLockedValue { $0.phase == .finished }
    }

    /// The error passed to ``finish(throwing:)``, if any.
    public var error: (any Error)? {
        lifecycle.withLockedValue { $0.failure }
    }

    /// Starts the operation: runs the body, or finishes at once if the operation was cancelled.
    ///
    /// The dispatcher starts the operations it receives from reducers; call this yourself only for an
    /// operation you run outside a dispatcher. Starting twice does nothing.
    public override func start() {
        let claimed = lifecycle.withLockedValue { lifecycle in
            guard lifecycle.phase == .ready else { return false }
            lifecycle.phase = .starting
            return true
        }
        guard claimed else { return }
        guard !isCancelled else {
            _ = finish(error: nil)
            return
        }
        willChangeValue(forKey: "isExecuting")
        lifecycle.withLockedValue { lifecycle in
            lifecycle.phase = .executing
            lifecycle.didRunBody = true
        }
        didChangeValue(forKey: "isExecuting")
        body(self, action, store)
    }

    /// Marks the operation finished; call it exactly once, when the body's work is done.
    ///
    /// - Returns: `true` the first time; `false`, doing nothing, when the operation had already
    ///   finished or has not started.
    /// - Note: Safe from any thread.
    @discardableResult
    public func finish() -> Bool {
        finish(error: nil)
    }

    /// Marks the operation finished with an error: the dispatch's result lists the store as failed.
    ///
    /// - Parameter error: Why the work failed.
    /// - Returns: `true` the first time; `false`, doing nothing, when the operation had already
    ///   finished or has not started.
    /// - Note: Safe from any thread.
    @discardableResult
    public func finish(throwing error: any Error) -> Bool {
        finish(error: error)
    }

    /// Calls `handler` once when the operation is cancelled, or at once if it already is.
    ///
    /// Use it to stop work that runs elsewhere, such as a request on another queue, instead of
    /// polling `isCancelled`; the body should still call ``finish()`` when that work has stopped.
    ///
    /// ```swift
    /// ActionOperation(action: action, store: store) { operation, action, store in
    ///     let request = client.start(action) { reply in
    ///         store.updateState { $0.apply(reply) }
    ///         operation.finish()
    ///     }
    ///     operation.onCancel { request.stop() }
    /// }
    /// ```
    ///
    /// - Parameter handler: Called on the thread that cancels the operation (or on the caller's
    ///   thread when it is cancelled already), outside the operation's lock.
    /// - Note: Safe from any thread. Handlers added after the operation finished are still called if
    ///   it had been cancelled.
    public func onCancel(_ handler: @escaping @Sendable () -> Void) {
        let cancelled = lifecycle.withLockedValue { lifecycle in
            guard lifecycle.cancellationSeen else {
                lifecycle.cancellationHandlers.append(handler)
                return false
            }
            return true
        }
        if cancelled { handler() }
    }

    /// Cancels the operation: a body that has not started never runs, a running one sees
    /// `isCancelled` become `true`, and the ``onCancel(_:)`` handlers are called.
    public override func cancel() {
        super.cancel()
        let handlers = lifecycle.withLockedValue { lifecycle in
            defer {
                lifecycle.cancellationSeen = true
                lifecycle.cancellationHandlers = []
            }
            return lifecycle.cancellationSeen ? [] : lifecycle.cancellationHandlers
        }
        for handler in handlers {
            handler()
        }
    }

    /// `ActionOperation(<store>, <action>)`.
    public override var description: String {
        "ActionOperation(\(store.identifier), \(action))"
    }

    /// Finishes the operation, with `error` for a failure; `false` if it finished already or never started.
    private func finish(error: (any Error)?) -> Bool {
        let wasExecuting: Bool? = lifecycle.withLockedValue { lifecycle in
            guard lifecycle.phase == .executing || lifecycle.phase == .starting else { return nil }
            let executing = lifecycle.phase == .executing
            lifecycle.phase = .finishing
            lifecycle.failure = error
            return executing
        }
        guard let wasExecuting else { return false }
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        let cancelled = isCancelled
        let (hook, status, ranBody) = lifecycle.withLockedValue { lifecycle in
            lifecycle.phase = .finished
            let hook = lifecycle.runningInline ? nil : lifecycle.finishHook
            lifecycle.finishHook = nil
            return (hook, lifecycle.status(isCancelled: cancelled), lifecycle.didRunBody)
        }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
        hook?(status, ranBody)
        return true
    }

    // MARK: Dispatcher support

    /// Marks the operation as taken by a dispatcher; `false` when it was already taken or started.
    func claimForDispatcher() -> Bool {
        lifecycle.withLockedValue { lifecycle in
            guard !lifecycle.claimedByDispatcher, lifecycle.phase == .ready else { return false }
            lifecycle.claimedByDispatcher = true
            return true
        }
    }

    /// Sets what to call, once, when the operation finishes on its own (not inside `runInline()`).
    func setFinishHook(_ hook: @escaping (StoreOutcome.Status, Bool) -> Void) {
        lifecycle.withLockedValue { $0.finishHook = hook }
    }

    /// Detaches the finish hook of an operation the dispatcher abandoned (a timeout, a shutdown):
    /// its finishing later reaches nobody.
    ///
    /// - Returns: Whether the hook was detached; `false` when the operation finished or is finishing
    ///   (the hook then runs, or ran, as usual).
    func detachFinishHook() -> Bool {
        lifecycle.withLockedValue { lifecycle in
            guard lifecycle.phase != .finishing, lifecycle.phase != .finished, lifecycle.finishHook != nil else {
                return false
            }
            lifecycle.finishHook = nil
            return true
        }
    }

    /// Starts the operation on the calling thread.
    ///
    /// - Returns: The status and whether the body ran, when the operation finished before `start()`
    ///   returned (the finish hook is then not called); `nil` when it finishes later (the hook will be).
    func runInline() -> (StoreOutcome.Status, Bool)? {
        lifecycle.withLockedValue { $0.runningInline = true }
        start()
        let cancelled = isCancelled
        return lifecycle.withLockedValue { lifecycle in
            lifecycle.runningInline = false
            guard lifecycle.phase == .finished else { return nil }
            return (lifecycle.status(isCancelled: cancelled), lifecycle.didRunBody)
        }
    }
}
