extension Dispatcher {
    /// Runs until the task running it is cancelled, then shuts down, letting every transaction in
    /// flight finish, and returns.
    ///
    /// This is the shape of swift-service-lifecycle's `Service` protocol, so a program using that
    /// package makes the dispatcher a service in one line, without DispatchStore depending on it:
    ///
    /// ```swift
    /// extension Dispatcher: @retroactive Service {}
    /// let group = ServiceGroup(services: [journal, dispatcher], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// Without that package, run it in a task and cancel the task to stop:
    ///
    /// ```swift
    /// let service = Task { try await dispatcher.run() }
    /// // ...
    /// service.cancel()
    /// try await service.value  // every accepted action has finished
    /// ```
    ///
    /// The shutdown is ``shutdown(_:timeout:)`` with ``ShutdownPolicy/drain`` and no time limit; it
    /// runs even though the task is cancelled. ServiceLifecycle asks services to stop gracefully by
    /// cancelling them only if told to; wrap the call in its `cancelWhenGracefulShutdown` for that.
    ///
    /// - Throws: Nothing today; the signature matches `Service.run()`.
    /// - Note: A dispatcher shut down by other means keeps this waiting until its task is cancelled.
    public func run() async throws {
        try await run(shutdownTimeout: nil)
    }

    /// Runs until the task running it is cancelled, then shuts down, waiting at most
    /// `shutdownTimeout` for the transactions in flight; see ``run()``.
    ///
    /// - Parameter shutdownTimeout: The longest to wait for the transactions in flight before
    ///   cancelling them (see ``shutdown(_:timeout:)``); `nil` waits as long as it takes.
    /// - Throws: ``DispatchError`` with code ``DispatchError/Code/timedOut`` when transactions were
    ///   still in flight after the timeout and the cancellations that followed it.
    public func run(shutdownTimeout: Duration?) async throws {
        await waitForCancellation()
        // A new task: in the cancelled one, the shutdown would stop waiting at once.
        let report = await Task { await shutdown(.drain, timeout: shutdownTimeout) }.value
        guard report.isIdle else {
            throw DispatchError(
                .timedOut,
                "the dispatcher still had transactions in flight after its shutdown timeout and the cancellations "
                    + "that followed it: \(report)"
            )
        }
    }
}

/// Suspends until the task running it is cancelled (at once if it is already).
package func waitForCancellation() async {
    enum Wait {
        case idle
        case waiting(CheckedContinuation<Void, Never>)
        case cancelled
    }
    let wait = LockedBox(Wait.idle)
    await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let cancelled = wait.withLockedValue { state -> Bool in
                if case .cancelled = state { return true }
                state = .waiting(continuation)
                return false
            }
            if cancelled { continuation.resume() }
        }
    } onCancel: {
        let waiting = wait.withLockedValue { state -> CheckedContinuation<Void, Never>? in
            defer { state = .cancelled }
            if case .waiting(let continuation) = state { return continuation }
            return nil
        }
        waiting?.resume()
    }
}
