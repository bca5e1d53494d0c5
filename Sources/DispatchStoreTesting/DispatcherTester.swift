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
/// finished and was not asserted with ``receive(_:isolation:sourceLocation:_:)`` (one that finished
/// during a step whose expectations cover its stores needs none); a store that
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
    let middleware: TesterMiddleware

    var state: Locked<TesterState> {
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
        let state = Locked(TesterState(exhaustivity: exhaustivity, timeout: timeout))
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

        let (limit, token, start): (Duration, Int, Int) = state.withLock { state in
            state.nextSendToken += 1
            state.pendingSends[state.nextSendToken] = "\(call) at \(sourceLocation)"
            return (state.timeout, state.nextSendToken, state.sequence)
        }
        let shot = OneShot<FinishedTransaction?>()
        let completion: @Sendable (DispatchResult) -> Void = { [middleware] result in
            shot.resume(Self.claim(result, token: token, in: middleware.state))
        }
        let dispatched = Locked<Transaction?>(nil)
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
        let left = settleNested(after: start, before: finished, call: call, expected: expected, states: before)
        StepCheck(call: call, location: sourceLocation, exhaustivity: exhaustivity)
            .check(finished.result, expected, before: before, after: after, absorbedBy: nil, leftToReceive: left)
        state.withLock { state in
            state.baseline = after
            state.baselineSequence = finished.sequence
            state.baselineStep = call
        }
        return finished.result
    }
}
