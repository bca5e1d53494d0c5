import Foundation

extension Dispatcher {
    // MARK: Awaiting a dispatch

    /// Dispatches an action and suspends until its transaction ends, returning the result.
    ///
    /// The same dispatch as ``dispatch(_:to:mode:timeout:then:)``, for async code: the result comes
    /// back once every reached store's operation has finished, its state is committed and its
    /// observers ran. Cancelling the awaiting task cancels the transaction (``Transaction/cancel()``):
    /// operations not started yet are skipped, running ones see `isCancelled`, and the result lists
    /// the cancelled stores (``DispatchResult/wasCancelled``). A task that is cancelled already
    /// still makes its transaction, with every store cancelled, so that middleware see it.
    ///
    /// ```swift
    /// let result = await dispatcher.perform(CounterAction.add(2))
    /// if result.succeeded { print(store.state.count) }
    /// ```
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - identifier: The identifier of the one store to reach; `nil` reaches every store whose
    ///     action type is the action's type.
    ///   - mode: Where the operations run; ``DispatchMode/async`` by default. With
    ///     ``DispatchMode/sync`` they start on the awaiting task's thread (an inline reduction
    ///     finishes there at once); an operation that runs on suspends the task, never blocks its
    ///     thread, and the task's cancellation cancels it like in the other modes.
    ///   - timeout: How long the operations may run once started; see
    ///     ``dispatch(_:to:mode:timeout:then:)``.
    /// - Returns: How the transaction ended; after ``shutdown(_:timeout:)``, a result whose error is
    ///   ``DispatchError/Code/shutDown``.
    /// - Note: Named `perform` rather than overloading `dispatch`, so that a `dispatch` call in async
    ///   code keeps returning at once.
    @discardableResult
    public func perform<Action: ActionType>(
        _ action: Action,
        to identifier: String? = nil,
        mode: DispatchMode = .async,
        timeout: Duration? = nil
    ) async -> DispatchResult {
        let handle = TransactionHandle()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<DispatchResult, Never>) in
                let transaction = dispatch(
                    action,
                    to: identifier,
                    mode: mode,
                    timeout: timeout,
                    startCancelled: Task.isCancelled,
                    awaited: true
                ) { result in
                    continuation.resume(returning: result)
                }
                handle.set(transaction)
            }
        } onCancel: {
            handle.cancel()
        }
    }

    // MARK: Idleness and shutdown

    /// Suspends until no `.async`, `.serial` or `.mainThread` transaction is queued or running.
    ///
    /// The async counterpart of ``waitUntilIdle(timeout:)`` (named like `TaskGroup.waitForAll()`):
    /// the task is suspended, not blocked, so it may run on the main actor, whose queue then runs the
    /// queued `.mainThread` transactions meanwhile.
    ///
    /// ```swift
    /// for order in orders { dispatcher.dispatch(order, mode: .serial) }
    /// await dispatcher.waitForIdle()
    /// ```
    ///
    /// - Parameter timeout: The longest to wait; `nil` waits as long as it takes.
    /// - Returns: `true` once idle; `false` when the timeout passed or the task was cancelled first.
    /// - Note: Another task may dispatch again right after this returns. `.sync` dispatches running
    ///   on other threads are not waited for: they end before their own `dispatch` call returns.
    @discardableResult
    public func waitForIdle(timeout: Duration? = nil) async -> Bool {
        let waiter = LockedBox<UInt64?>(nil)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                guard let number = engine.idleness.add(continuation) else {
                    continuation.resume(returning: true)
                    return
                }
                waiter.withLockedValue { $0 = number }
                if Task.isCancelled {
                    engine.idleness.resume(number, returning: false)
                } else if let timeout {
                    OperationQueues.timers.asyncAfter(deadline: .now() + timeout.dispatchInterval) { [weak self] in
                        self?.engine.idleness.resume(number, returning: false)
                    }
                }
            }
        } onCancel: {
            if let number = waiter.withLockedValue({ $0 }) { engine.idleness.resume(number, returning: false) }
        }
    }

    /// Stops taking new actions, then finishes or cancels the transactions in flight, and reports
    /// what happened.
    ///
    /// From the moment this is called, every dispatch is rejected: no store sees it, and its
    /// completion (and each middleware's `didFinish`) receives a result whose error is
    /// ``DispatchError/Code/shutDown`` and that lists no store. That includes actions dispatched by
    /// operations or observers while the shutdown drains. Then, with ``ShutdownPolicy/drain``, the
    /// transactions already queued or running finish normally; with ``ShutdownPolicy/cancel``,
    /// they are cancelled (``Transaction/cancel()``), which skips what has not started. Either way
    /// each still gets its one completion.
    ///
    /// ```swift
    /// let report = await dispatcher.shutdown(timeout: .seconds(10))
    /// print(report)  // shutdown: 12 transactions finished (0 cancelled), 1 dispatch rejected, idle
    /// ```
    ///
    /// - Parameters:
    ///   - policy: Whether to let the transactions in flight finish (the default) or cancel them.
    ///   - timeout: The longest to wait for them. When it passes, the transactions still in flight
    ///     are cancelled and waited for once more, at most as long again. Those still running then
    ///     (an operation ignores cancellation) are abandoned: each gets its completion at once,
    ///     with the stores still running reported as cancelled (``ShutdownReport/abandoned``), and
    ///     the shutdown waits for the rest at most as long again. `nil` waits as long as it takes.
    /// - Returns: What the shutdown did. Calling it again waits again and reports again; the
    ///   dispatcher stays shut down.
    /// - Note: Like ``waitForIdle(timeout:)``, this does not wait for `.sync` dispatches running on
    ///   other threads. A `.mainThread` transaction needs the main queue running to end.
    @discardableResult
    public func shutdown(_ policy: ShutdownPolicy = .drain, timeout: Duration? = nil) async -> ShutdownReport {
        let clock = ContinuousClock()
        let start = clock.now
        let before = engine.shutDown()
        var cancelled = 0
        var timedOut = false
        if policy == .cancel { cancelled += engine.cancelInFlight() }
        var abandoned = 0
        var idle = await waitForIdle(timeout: timeout)
        if !idle {
            timedOut = true
            cancelled += engine.cancelInFlight()
            idle = await waitForIdle(timeout: timeout)
        }
        if !idle {
            // Operations that ignore cancellation: end their transactions without them.
            abandoned = engine.abandonInFlight()
            idle = await waitForIdle(timeout: timeout)
        }
        let after = engine.laneCounts
        return ShutdownReport(
            finished: after.finished - before.finished,
            cancelled: cancelled + after.cancelled - before.cancelled,
            rejected: engine.rejectedDispatches,
            timedOut: timedOut,
            isIdle: idle,
            duration: clock.now - start,
            abandoned: abandoned
        )
    }
}

/// The transaction of an awaited dispatch, for the task's cancellation handler, which may run
/// before the dispatch returned it.
private final class TransactionHandle: Sendable {
    private let state = LockedBox<(transaction: Transaction?, cancelled: Bool)>((nil, false))

    func set(_ transaction: Transaction) {
        let cancelNow = state.withLockedValue { state in
            state.transaction = transaction
            return state.cancelled
        }
        if cancelNow { transaction.cancel() }
    }

    func cancel() {
        let transaction = state.withLockedValue { state in
            state.cancelled = true
            return state.transaction
        }
        transaction?.cancel()
    }
}
