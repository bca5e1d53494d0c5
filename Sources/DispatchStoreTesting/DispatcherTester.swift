public import DispatchStore
import Foundation
public import Testing

/// Checks each dispatch of a test exhaustively, across every store of a dispatcher.
///
/// Wrap a dispatcher whose stores are registered, then send actions through the tester. Each
/// ``send(_:to:mode:isolation:sourceLocation:_:)`` dispatches the action, waits for its transaction
/// to end (in any mode, however its operations finish), and compares every store's committed state
/// with what the test expects:
///
/// ```swift
/// let tester = DispatcherTester(dispatcher)
/// await tester.send(TodoAction.add("milk")) {
///     $0.expect(todos) { $0.items = [Todo(title: "milk")] }
///     $0.expect(stats) { $0.total = 1 }
/// }
/// await tester.finish()
/// ```
///
/// Each expectation mutates a copy of the store's state from before the dispatch. When the
/// committed state differs, the tester records one Swift Testing issue at the expectation's line,
/// naming the store and each differing field. With ``Exhaustivity/on`` (the default) these are
/// issues too: a store that changed with no expectation; an expectation for a store that did not
/// change; an action no store handled, an operation that failed or was cancelled, unless the test
/// expects it (``Expectations/expectUnhandled(sourceLocation:)``,
/// ``Expectations/expectFailure(of:sourceLocation:)``, ``Expectations/expectCancelled(_:sourceLocation:)``);
/// a transaction dispatched elsewhere (by an operation, an observer or the test itself) that
/// finished and was not asserted with ``receive(_:isolation:sourceLocation:_:)``; a store that
/// changed between steps outside any transaction. ``finish()`` reports anything still in flight.
///
/// **Waiting.** A step waits for its transaction's completion, which the dispatcher calls exactly
/// once, after every reached store's operation finished (including operations finishing later on
/// other threads and `waitsFor` chains), its state was committed and its observers ran. Nothing
/// sleeps and nothing polls. ``timeout`` only bounds the wait: a transaction that does not finish
/// within it is reported as an issue instead of hanging the test.
///
/// **Modes.** `.async` and `.serial` dispatch from the test's task; `.sync` dispatches from a
/// thread of the tester's, so that the time limit applies and the test's executor stays free;
/// `.mainThread` needs the main queue to run, which it does under Swift Testing (on Linux, the test
/// runner drives the main queue) and in an app. From a `@MainActor` test a `.mainThread` dispatch
/// runs inline, as it would in the app.
///
/// **Misuse** is reported as an issue naming the call, never a crash: an expectation for a store the
/// dispatcher does not know, a step after ``finish()``, or a step started while another one still
/// runs (from two tasks at once). Such a step does nothing else.
///
/// The tester registers a middleware with the dispatcher to see every transaction finish, and takes
/// each one's states in a consistent cut (no commit between reading two stores). It unregisters the
/// middleware in ``finish()``, or when released.
///
/// - Note: Thread-safe, and `Sendable`, but it checks one step at a time: await each step before
///   starting the next. Issues are recorded in the task that calls the step, so call the steps from
///   the test itself.
public final class DispatcherTester: Sendable {
    /// Which changes and outcomes a step must account for.
    public enum Exhaustivity: Sendable, Hashable {
        /// Every store, every outcome and every transaction dispatched elsewhere must be expected.
        case on
        /// Only the stores a step names are checked (their state and their operation's outcome);
        /// other stores' changes and outcomes, and transactions dispatched elsewhere that are not
        /// received, are skipped. Unhandled actions and transactions still in flight at
        /// ``DispatcherTester/finish(isolation:sourceLocation:)`` are still issues.
        case off
    }

    /// The dispatcher under test.
    public let dispatcher: Dispatcher
    private let middleware: TesterMiddleware

    private var state: Protected<TesterState> {
        middleware.state
    }

    /// Creates a tester for `dispatcher`, whose stores should be registered already.
    ///
    /// ```swift
    /// let tester = DispatcherTester(dispatcher)
    /// ```
    ///
    /// Stores registered later are checked too, from the first step that sees them. The states the
    /// stores have now are the starting point of the out-of-band checks between steps.
    ///
    /// - Parameters:
    ///   - dispatcher: The dispatcher to test. The tester registers a middleware with it.
    ///   - exhaustivity: ``Exhaustivity/on`` (the default) checks every store; ``Exhaustivity/off``
    ///     only the stores each step names.
    ///   - timeout: The longest a step or ``finish()`` waits for a transaction before reporting it
    ///     as an issue; 30 seconds by default, enough for a loaded machine or a sanitizer. Only a
    ///     transaction that does not finish waits this long.
    /// - Note: Create the tester in the test, before the steps; it may be shared with other tasks,
    ///   but steps must not overlap.
    public init(_ dispatcher: Dispatcher, exhaustivity: Exhaustivity = .on, timeout: Duration = .seconds(30)) {
        self.dispatcher = dispatcher
        let state = Protected(TesterState(exhaustivity: exhaustivity, timeout: timeout))
        middleware = TesterMiddleware(state: state)
        dispatcher.register(middleware: middleware)
        let baseline = StoreStates(reading: dispatcher.stores)
        state.withLock { $0.baseline = baseline }
    }

    deinit {
        if !state.withLock({ $0.isFinished }) {
            dispatcher.unregister(middleware: middleware)
        }
    }

    /// Which changes and outcomes the following steps must account for.
    ///
    /// - Note: Safe to set between steps, from any thread.
    public var exhaustivity: Exhaustivity {
        get { state.withLock { $0.exhaustivity } }
        set { state.withLock { $0.exhaustivity = newValue } }
    }

    /// The longest a step or ``finish()`` waits for a transaction before reporting it as an issue.
    ///
    /// ```swift
    /// tester.timeout = .seconds(2)
    /// ```
    ///
    /// - Note: Safe to set between steps, from any thread. A step that times out leaves its
    ///   transaction running; ``finish()`` reports it if it is still running then.
    public var timeout: Duration {
        get { state.withLock { $0.timeout } }
        set { state.withLock { $0.timeout = newValue } }
    }

    // MARK: Steps

    /// Dispatches `action`, waits for its transaction to end, and checks every store against
    /// `expectations`.
    ///
    /// ```swift
    /// await tester.send(CounterAction.add(2)) {
    ///     $0.expect(counter) { $0.count = 2 }
    /// }
    /// await tester.send(CounterAction.increase, to: "counter", mode: .serial) {
    ///     $0.expect(counter) { $0.count = 3 }
    /// }
    /// ```
    ///
    /// Before dispatching, with ``Exhaustivity/on``, it reports transactions dispatched elsewhere
    /// that finished and were not received, and stores that changed since the last step outside
    /// any transaction. Then it reads every store's state, runs `expectations` on copies of them,
    /// dispatches, and waits for the dispatch's completion (at most ``timeout``). Then it records
    /// an issue, at this call or at the expectation concerned, for each store whose state is not
    /// the expected one and for each outcome not expected; see ``DispatcherTester``.
    ///
    /// - Parameters:
    ///   - action: The action to dispatch.
    ///   - identifier: The identifier of the one store to reach, as in `Dispatcher.dispatch(_:to:)`;
    ///     `nil` (the default) reaches every store handling the action's type.
    ///   - mode: The dispatch mode; ``DispatchMode/async`` by default. `.sync` runs on a thread of
    ///     the tester's; `.mainThread` needs the main queue running (it does under Swift Testing).
    ///   - isolation: The caller's actor, where the step runs; inferred.
    ///   - sourceLocation: Where to report the step's issues; the caller's location by default.
    ///   - expectations: Describes the expected states and outcomes; see ``Expectations``.
    /// - Returns: The transaction's result, or `nil` when the step did not complete (it timed out,
    ///   or was misused and did nothing).
    /// - Note: Issues are recorded in the calling task. Do not start another step before this one
    ///   returns.
    @discardableResult
    public func send<Action: ActionType>(
        _ action: Action,
        to identifier: String? = nil,
        mode: DispatchMode = .async,
        isolation: isolated (any Actor)? = #isolation,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ expectations: (inout Expectations) throws -> Void = { _ in }
    ) async -> DispatchResult? {
        var arguments = [describe(action)]
        if let identifier { arguments.append("to: \(String(reflecting: identifier))") }
        if mode != .async { arguments.append("mode: .\(mode)") }
        let call = "send(\(arguments.joined(separator: ", ")))"
        guard beginStep(call, at: sourceLocation) else { return nil }
        defer { endStep() }
        checkBetweenSteps(call, at: sourceLocation)

        let before = StoreStates(reading: dispatcher.stores)
        var expected = Expectations(dispatcher: dispatcher, call: call, before: before)
        do {
            try expectations(&expected)
        } catch {
            Issue.record(error, Comment(rawValue: "\(call): the expectations threw"), sourceLocation: sourceLocation)
        }

        let (limit, token): (Duration, Int) = state.withLock { state in
            state.nextSendToken += 1
            state.pendingSends[state.nextSendToken] = "\(call) at \(sourceLocation)"
            return (state.timeout, state.nextSendToken)
        }
        let shot = OneShot<FinishedTransaction?>()
        let completion: @Sendable (DispatchResult) -> Void = { [middleware] result in
            shot.resume(Self.claim(result, token: token, in: middleware.state))
        }
        let dispatched = Protected<Transaction?>(nil)
        let dispatcher = dispatcher
        let finished = await shot.wait(limit: limit, fallback: nil) {
            if mode == .sync {
                // On a thread of its own, so that the limit applies and the test's executor is free.
                Thread.detachNewThread {
                    let transaction = dispatcher.dispatch(action, to: identifier, mode: .sync, then: completion)
                    dispatched.withLock { $0 = transaction }
                }
            } else {
                let transaction = dispatcher.dispatch(action, to: identifier, mode: mode, then: completion)
                dispatched.withLock { $0 = transaction }
            }
        }
        guard let finished else {
            let inFlight = describeInFlight()
            Issue.record(
                Comment(
                    rawValue: "\(call) did not finish within \(limit.readable)"
                        + (inFlight.isEmpty ? "" : "; in flight: \(inFlight)")
                        + ". Make its operations finish, or raise the tester's timeout if they need longer"
                ),
                sourceLocation: sourceLocation
            )
            return nil
        }
        let after = finished.states ?? StoreStates(reading: dispatcher.stores)
        let exhaustivity = self.exhaustivity
        StepCheck(call: call, location: sourceLocation, exhaustivity: exhaustivity)
            .check(finished.result, expected, before: before, after: after, absorbedBy: nil)
        state.withLock { state in
            state.baseline = after
            state.baselineSequence = finished.sequence
            state.baselineStep = call
        }
        return finished.result
    }

    /// Waits for the next transaction dispatched elsewhere (by an operation, an observer, or the
    /// test itself) to finish, checks that its action is `action`, and checks every store against
    /// `expectations`.
    ///
    /// ```swift
    /// await tester.send(LoadAction.start) { $0.expect(loader) { $0.isLoading = true } }
    /// await tester.receive(LoadAction.loaded(["milk"])) {
    ///     $0.expect(loader) { $0.isLoading = false; $0.items = ["milk"] }
    /// }
    /// ```
    ///
    /// Transactions are received in the order they finished. The states compared are those every
    /// store had when the transaction finished (a consistent cut), against those the last step
    /// ended with. A transaction that finished while a ``send(_:to:mode:isolation:sourceLocation:_:)``
    /// was waiting (a `.sync` dispatch made by an operation, for example) is part of that step: its
    /// changes were checked there, and an expectation here is reported as a store that did not
    /// change.
    ///
    /// With ``Exhaustivity/on`` the next transaction must carry `action`; with ``Exhaustivity/off``
    /// other transactions are skipped until one carries it.
    ///
    /// - Parameters:
    ///   - action: The expected action.
    ///   - isolation: The caller's actor, where the step runs; inferred.
    ///   - sourceLocation: Where to report the step's issues; the caller's location by default.
    ///   - expectations: Describes the expected states and outcomes; see ``Expectations``.
    /// - Returns: The received transaction's result, or `nil` when none came within ``timeout`` or
    ///   it carried another action.
    /// - Note: Issues are recorded in the calling task. Do not start another step before this one
    ///   returns.
    @discardableResult
    public func receive<Action: ActionType & Equatable>(
        _ action: Action,
        isolation: isolated (any Actor)? = #isolation,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ expectations: (inout Expectations) throws -> Void = { _ in }
    ) async -> DispatchResult? {
        let call = "receive(\(describe(action)))"
        guard beginStep(call, at: sourceLocation) else { return nil }
        defer { endStep() }
        let (limit, exhaustivity) = state.withLock { ($0.timeout, $0.exhaustivity) }
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        var received: FinishedTransaction?
        while received == nil {
            let (next, waiter): (FinishedTransaction?, OneShot<Bool>?) = state.withLock { state in
                guard state.unclaimed.isEmpty else { return (state.unclaimed.removeFirst(), nil) }
                let waiter = OneShot<Bool>()
                state.finishWaiter = waiter
                return (nil, waiter)
            }
            if let next {
                if next.result.transaction.action as? Action == action {
                    received = next
                } else {
                    advanceBaseline(past: next)
                    guard exhaustivity == .off else {
                        Issue.record(
                            Comment(
                                rawValue: "\(call): the next transaction dispatched outside the tester was "
                                    + "\(describe(next.result)), not \(describe(action))"
                            ),
                            sourceLocation: sourceLocation
                        )
                        return nil
                    }
                }
                continue
            }
            let remaining = deadline - clock.now
            var woken = false
            if remaining > .zero, let waiter {
                woken = await waiter.wait(limit: remaining, fallback: false) {}
            }
            if !woken {
                state.withLock { state in
                    if state.finishWaiter === waiter { state.finishWaiter = nil }
                }
                Issue.record(
                    Comment(
                        rawValue: "\(call): no transaction dispatched outside the tester "
                            + "\(exhaustivity == .on ? "" : "with that action ")finished within \(limit.readable)"
                    ),
                    sourceLocation: sourceLocation
                )
                return nil
            }
        }
        guard let received else { return nil }

        let (baseline, baselineSequence, baselineStep) = state.withLock {
            ($0.baseline, $0.baselineSequence, $0.baselineStep)
        }
        let before = baseline ?? StoreStates(reading: dispatcher.stores)
        let absorbed = received.sequence <= baselineSequence
        var expected = Expectations(dispatcher: dispatcher, call: call, before: before)
        do {
            try expectations(&expected)
        } catch {
            Issue.record(error, Comment(rawValue: "\(call): the expectations threw"), sourceLocation: sourceLocation)
        }
        let after = absorbed ? before : (received.states ?? StoreStates(reading: dispatcher.stores))
        StepCheck(call: call, location: sourceLocation, exhaustivity: exhaustivity)
            .check(received.result, expected, before: before, after: after, absorbedBy: absorbed ? baselineStep : nil)
        advanceBaseline(past: received, step: call)
        return received.result
    }

    /// Checks every store's state now against the last step's, for changes made without a
    /// transaction of the tester's: a recorder move, an `updateState` outside any operation, or
    /// dispatches the test made itself.
    ///
    /// ```swift
    /// recorder.previous()
    /// tester.assert {
    ///     $0.expect(counter) { $0.count = 0 }
    /// }
    /// ```
    ///
    /// The expectations mutate copies of the states the last step ended with; the tester compares
    /// them with the states now, as a step does (with ``Exhaustivity/on``, a store that changed with
    /// no expectation is an issue). Transactions dispatched elsewhere that finished since the last
    /// step are accounted for by this check: they need no ``receive(_:isolation:sourceLocation:_:)``.
    /// It does not wait: make sure what you check has finished (a `.sync` dispatch, a recorder move,
    /// `await dispatcher.waitForIdle()`).
    ///
    /// - Parameters:
    ///   - sourceLocation: Where to report the issues; the caller's location by default.
    ///   - expectations: The expected states. Outcome expectations (``Expectations/expectUnhandled(sourceLocation:)``,
    ///     ``Expectations/expectFailure(of:sourceLocation:)``, ``Expectations/expectCancelled(_:sourceLocation:)``)
    ///     need a transaction and are reported as misuse here.
    /// - Note: Issues are recorded in the calling task. Do not call it while a step runs.
    public func assert(
        sourceLocation: SourceLocation = #_sourceLocation,
        _ expectations: (inout Expectations) throws -> Void
    ) {
        let call = "assert(_:)"
        guard beginStep(call, at: sourceLocation) else { return }
        defer { endStep() }
        let (baseline, exhaustivity) = state.withLock { state in
            defer { state.unclaimed = [] }
            return (state.baseline, state.exhaustivity)
        }
        let before = baseline ?? StoreStates(reading: dispatcher.stores)
        var expected = Expectations(dispatcher: dispatcher, call: call, before: before)
        do {
            try expectations(&expected)
        } catch {
            Issue.record(error, Comment(rawValue: "\(call): the expectations threw"), sourceLocation: sourceLocation)
        }
        let after = StoreStates(reading: dispatcher.stores)
        StepCheck(call: call, location: sourceLocation, exhaustivity: exhaustivity)
            .check(nil, expected, before: before, after: after, absorbedBy: nil)
        state.withLock { state in
            state.baseline = after
            state.baselineSequence = state.sequence
            state.baselineStep = call
        }
    }

    /// Waits for everything in flight to end, then reports what is left: transactions still in
    /// flight, and, with ``Exhaustivity/on``, transactions dispatched elsewhere that were not
    /// received and stores changed since the last step.
    ///
    /// ```swift
    /// await tester.finish()
    /// ```
    ///
    /// It waits (at most ``timeout``) until the dispatcher is idle and every step's transaction
    /// ended, then records an issue listing each transaction still in flight. Then it unregisters
    /// the tester's middleware: later steps are reported as misuse.
    ///
    /// - Parameters:
    ///   - isolation: The caller's actor, where the step runs; inferred.
    ///   - sourceLocation: Where to report the issues; the caller's location by default.
    /// - Note: Issues are recorded in the calling task. Call it once, last.
    public func finish(
        isolation: isolated (any Actor)? = #isolation,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let call = "finish()"
        guard beginStep(call, at: sourceLocation) else { return }
        defer { endStep() }
        let limit = timeout
        let clock = ContinuousClock()
        let start = clock.now
        let idle = await dispatcher.waitForIdle(timeout: limit)
        let sendsEnded = await waitForPendingSends(limit: limit - (clock.now - start))
        let (pendingSends, exhaustivity): ([String], Exhaustivity) = state.withLock { state in
            state.isFinished = true
            return (state.pendingSends.values.sorted(), state.exhaustivity)
        }
        let inFlight = describeInFlight()
        if !idle || !sendsEnded || !inFlight.isEmpty || !pendingSends.isEmpty {
            var parts: [String] = []
            if !inFlight.isEmpty { parts.append(inFlight) }
            if !pendingSends.isEmpty { parts.append("from \(pendingSends.joined(separator: "; "))") }
            if parts.isEmpty { parts.append("the dispatcher's queues are not idle") }
            Issue.record(
                Comment(
                    rawValue: "\(call): transactions are still in flight after \(limit.readable): "
                        + parts.joined(separator: "; ")
                ),
                sourceLocation: sourceLocation
            )
        }
        if exhaustivity == .on {
            checkBetweenSteps(call, at: sourceLocation)
        }
        dispatcher.unregister(middleware: middleware)
    }

    // MARK: Internals

    /// Marks the start of a step; records an issue and returns `false` for a misused tester.
    private func beginStep(_ call: String, at location: SourceLocation) -> Bool {
        let problem: String? = state.withLock { state in
            if state.isFinished {
                return call == "finish()"
                    ? "finish() was called again; the tester already finished"
                    : "\(call) was called after finish(); the tester no longer watches the dispatcher, "
                        + "so the step did nothing: create a new DispatcherTester for more steps"
            }
            if let running = state.runningStep {
                return "\(call) was called while \(running) is still running; the step did nothing. "
                    + "A tester checks one step at a time: await each step before starting the next"
            }
            state.runningStep = call
            return nil
        }
        guard let problem else { return true }
        Issue.record(Comment(rawValue: problem), sourceLocation: location)
        return false
    }

    private func endStep() {
        state.withLock { $0.runningStep = nil }
    }

    /// Reports, with ``Exhaustivity/on``, the transactions dispatched elsewhere that finished and
    /// were not received, or else the stores that changed since the last step; forgets them.
    private func checkBetweenSteps(_ call: String, at location: SourceLocation) {
        let (unclaimed, baseline, exhaustivity) = state.withLock { state in
            defer { state.unclaimed = [] }
            return (state.unclaimed, state.baseline, state.exhaustivity)
        }
        guard exhaustivity == .on else { return }
        guard unclaimed.isEmpty else {
            let count = unclaimed.count == 1 ? "1 transaction" : "\(unclaimed.count) transactions"
            Issue.record(
                Comment(
                    rawValue: "\(call): \(count) dispatched outside the tester finished and "
                        + "\(unclaimed.count == 1 ? "was" : "were") not received: "
                        + unclaimed.map { describe($0.result) }.joined(separator: "; ")
                        + ". Assert each with receive(_:) before this step, or set exhaustivity to .off"
                ),
                sourceLocation: location
            )
            return
        }
        guard let baseline else { return }
        let now = StoreStates(reading: dispatcher.stores)
        for identifier in now.identifiers {
            guard let then = baseline[identifier], let current = now[identifier], !StateDiff.areEqual(then, current)
            else { continue }
            Issue.record(
                Comment(
                    rawValue: "\(call): store '\(identifier)' changed since the last step without a transaction "
                        + "(an updateState outside any operation, or a recorder move):\n"
                        + StateDiff.render(StateDiff.differences(then, current), lhs: "was", rhs: "now")
                ),
                sourceLocation: location
            )
        }
    }

    /// Makes the states `transaction` finished with the baseline, unless a later step's already are.
    private func advanceBaseline(past transaction: FinishedTransaction, step: String? = nil) {
        state.withLock { state in
            guard transaction.sequence > state.baselineSequence, let states = transaction.states else { return }
            state.baseline = states
            state.baselineSequence = transaction.sequence
            state.baselineStep = step ?? describe(transaction.result)
        }
    }

    /// Suspends until every step's transaction ended, at most `limit`; `false` when some did not.
    private func waitForPendingSends(limit: Duration) async -> Bool {
        let waiter: OneShot<Bool>? = state.withLock { state in
            guard !state.pendingSends.isEmpty else { return nil }
            let waiter = OneShot<Bool>()
            state.sendsWaiter = waiter
            return waiter
        }
        guard let waiter else { return true }
        guard limit > .zero else { return false }
        return await waiter.wait(limit: limit, fallback: false) {}
    }

    /// Takes the finished record of a step's own transaction (so that it is never received), and
    /// ends the step's pending send.
    private static func claim(
        _ result: DispatchResult,
        token: Int,
        in state: Protected<TesterState>
    ) -> FinishedTransaction {
        let (claimed, waiter): (FinishedTransaction, OneShot<Bool>?) = state.withLock { state in
            state.pendingSends[token] = nil
            var waiter: OneShot<Bool>?
            if state.pendingSends.isEmpty {
                waiter = state.sendsWaiter
                state.sendsWaiter = nil
            }
            let id = result.transaction.id
            if let index = state.unclaimed.firstIndex(where: { $0.result.transaction.id == id }) {
                return (state.unclaimed.remove(at: index), waiter)
            }
            // Not seen by the middleware (it cannot happen while the tester is registered).
            return (FinishedTransaction(sequence: state.sequence, result: result, states: nil), waiter)
        }
        waiter?.resume(true)
        return claimed
    }

    /// The transactions started in some store and not finished, for a message.
    private func describeInFlight() -> String {
        let inFlight = state.withLock { $0.inFlight.values.sorted { $0.transaction.id < $1.transaction.id } }
        return inFlight.map { entry in
            let running = entry.running.map { "'\($0)'" }.joined(separator: ", ")
            return "#\(entry.transaction.id) \(describe(entry.transaction.action)) -> "
                + "[\(entry.transaction.storeIdentifiers.joined(separator: ", "))] (\(entry.transaction.mode))"
                + (running.isEmpty ? "" : ", running in \(running)")
        }.joined(separator: "; ")
    }
}

/// An action as a test writes it: `CounterAction.add(2)` for an enum case, its description otherwise.
func describe(_ action: any ActionType) -> String {
    let text = String(describing: action)
    guard Mirror(reflecting: action).displayStyle == .enum else { return text }
    return "\(type(of: action)).\(text)"
}

/// A finished transaction for a message: `CounterAction.increase (#12, counter finished)`.
func describe(_ result: DispatchResult) -> String {
    let outcomes = result.outcomes.map { "\($0.storeIdentifier) \($0.status)" }
    let summary = outcomes.isEmpty ? "unhandled" : outcomes.joined(separator: ", ")
    return "\(describe(result.transaction.action)) (#\(result.transaction.id), \(summary))"
}
