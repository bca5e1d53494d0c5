public import DispatchStore
import Foundation
public import Testing

extension DispatcherTester {
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
    /// was waiting (a `.sync` dispatch made by an operation or an observer) is checked once: the
    /// stores that send expected were checked there (an expectation here is reported as a store
    /// that did not change, and the receive may be left out), and the others are checked here,
    /// against their states from before that send.
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
                } else if next.isAccountedFor {
                    // The step it finished during accounted for it: no receive needed.
                    continue
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
        var before = baseline ?? StoreStates(reading: dispatcher.stores)
        let absorbed = received.sequence <= baselineSequence
        var after = absorbed ? before : (received.states ?? StoreStates(reading: dispatcher.stores))
        if absorbed {
            // The stores the send it finished during left to it: their change from before that send
            // to this transaction's end is checked here.
            let left = state.withLock { state in
                var left: [(String, any StateType, any StateType)] = []
                for outcome in received.result.outcomes {
                    let store = outcome.storeIdentifier
                    guard let then = state.leftToReceive[store], let now = received.states?[store] else { continue }
                    left.append((store, then, now))
                    state.leftToReceive[store] = now
                }
                return left
            }
            for (store, then, now) in left {
                before = before.replacing(store, with: then)
                after = after.replacing(store, with: now)
            }
        }
        var expected = Expectations(dispatcher: dispatcher, call: call, before: before)
        do {
            try expectations(&expected)
        } catch {
            Issue.record(error, Comment(rawValue: "\(call): the expectations threw"), sourceLocation: sourceLocation)
        }
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
            defer {
                state.unclaimed = []
                state.leftToReceive = [:]
            }
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
}
