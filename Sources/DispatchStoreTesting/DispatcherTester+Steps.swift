import DispatchStore
import Foundation
import Testing

extension DispatcherTester {
    /// Marks the start of a step; records an issue and returns `false` for a misused tester.
    func beginStep(_ call: String, at location: SourceLocation) -> Bool {
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

    func endStep() {
        state.withLock { $0.runningStep = nil }
    }

    /// Reports, with ``Exhaustivity/on``, the transactions dispatched elsewhere that finished and
    /// were not received, or else the stores that changed since the last step; forgets them.
    func checkBetweenSteps(_ call: String, at location: SourceLocation) {
        let (unclaimed, baseline, exhaustivity) = state.withLock { state in
            defer {
                state.unclaimed = []
                state.leftToReceive = [:]
            }
            return (state.unclaimed.filter { !$0.isAccountedFor }, state.baseline, state.exhaustivity)
        }
        guard exhaustivity == .on else { return }
        guard unclaimed.isEmpty else {
            let count = unclaimed.count == 1 ? "1 transaction" : "\(unclaimed.count) transactions"
            let during = unclaimed.contains { $0.during != nil }
            Issue.record(
                Comment(
                    rawValue: "\(call): \(count) dispatched outside the tester finished and "
                        + "\(unclaimed.count == 1 ? "was" : "were") not received: "
                        + unclaimed.map { describe($0.result) + ($0.during.map { ", during \($0)" } ?? "") }
                        .joined(separator: "; ")
                        + ". Assert each with receive(_:) before this step"
                        + (during ? ", or expect its changes in the step it finished during" : "")
                        + ", or set exhaustivity to .off"
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

    /// Settles the transactions dispatched elsewhere that finished while a send waited for its own.
    ///
    /// One whose stores the send expects, or reached itself, is accounted for and needs no
    /// receive; the other stores they changed are left to their receives, not reported by the send.
    /// Either way an event is reported once.
    ///
    /// - Parameters:
    ///   - start: The tester's transaction count when the send dispatched.
    ///   - finished: The send's own transaction.
    ///   - call: The send, for messages.
    ///   - expected: The send's expectations.
    ///   - states: The states from before the send.
    /// - Returns: The stores left to receives.
    func settleNested(
        after start: Int,
        before finished: FinishedTransaction,
        call: String,
        expected: Expectations,
        states: StoreStates
    ) -> Set<String> {
        let covered = expected.namedStores.union(finished.result.outcomes.map(\.storeIdentifier))
        return state.withLock { state in
            var left: Set<String> = []
            for index in state.unclaimed.indices {
                let nested = state.unclaimed[index]
                guard nested.sequence > start, nested.sequence < finished.sequence else { continue }
                let stores = Set(nested.result.outcomes.map(\.storeIdentifier))
                state.unclaimed[index].during = call
                if nested.result.succeeded && !nested.result.isUnhandled && stores.isSubset(of: covered) {
                    state.unclaimed[index].isAccountedFor = true
                } else {
                    left.formUnion(stores.subtracting(covered))
                }
            }
            state.leftToReceive = [:]
            for store in left {
                state.leftToReceive[store] = states[store]
            }
            return left
        }
    }

    /// Makes the states `transaction` finished with the baseline, unless a later step's already are.
    func advanceBaseline(past transaction: FinishedTransaction, step: String? = nil) {
        state.withLock { state in
            guard transaction.sequence > state.baselineSequence, let states = transaction.states else { return }
            state.baseline = states
            state.baselineSequence = transaction.sequence
            state.baselineStep = step ?? describe(transaction.result)
        }
    }

    /// Suspends until every step's transaction ended, at most `limit`; `false` when some did not.
    func waitForPendingSends(limit: Duration) async -> Bool {
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
    static func claim(
        _ result: DispatchResult,
        token: Int,
        in state: Locked<TesterState>
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
    func describeInFlight() -> String {
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
