import DispatchStore
import Testing

/// Compares one finished step with its expectations and records an issue for each difference.
struct StepCheck {
    /// The step as the test wrote it, for example `send(CounterAction.increase)`.
    let call: String
    /// Where the step was called.
    let location: SourceLocation
    let exhaustivity: DispatcherTester.Exhaustivity

    /// Checks the outcomes of `result` and every store's state.
    ///
    /// - Parameters:
    ///   - result: How the step's transaction ended; `nil` for a step without one (`assert(_:)`).
    ///   - expected: What the test expects.
    ///   - before: The states before the step.
    ///   - after: The states when the transaction finished.
    ///   - absorbedBy: The step whose states already include this transaction's changes, if any.
    ///   - leftToReceive: Stores that only transactions finishing during this step changed, which
    ///     their receives check: a change there without an expectation is not this step's issue.
    func check(
        _ result: DispatchResult?,
        _ expected: DispatcherTester.Expectations,
        before: StoreStates,
        after: StoreStates,
        absorbedBy: String?,
        leftToReceive: Set<String> = []
    ) {
        if let result {
            checkOutcomes(result, expected)
        } else {
            rejectOutcomeExpectations(expected)
        }
        checkStates(expected, before: before, after: after, absorbedBy: absorbedBy, leftToReceive: leftToReceive)
    }

    /// Reports outcome expectations made in a step that has no transaction.
    private func rejectOutcomeExpectations(_ expected: DispatcherTester.Expectations) {
        var misplaced: [(String, SourceLocation)] = []
        if let location = expected.unhandled { misplaced.append(("expectUnhandled()", location)) }
        for (store, location) in expected.failures.sorted(by: { $0.key < $1.key }) {
            misplaced.append(("expectFailure(of:) for store '\(store)'", location))
        }
        for (store, location) in expected.cancellations.sorted(by: { $0.key < $1.key }) {
            misplaced.append(("expectCancelled(_:) for store '\(store)'", location))
        }
        for (what, location) in misplaced {
            record("\(what) needs a transaction; use it in send or receive, this step checks states only", at: location)
        }
    }

    private func record(_ message: String, at location: SourceLocation? = nil) {
        Issue.record(Comment(rawValue: "\(call): \(message)"), sourceLocation: location ?? self.location)
    }

    private func checkOutcomes(_ result: DispatchResult, _ expected: DispatcherTester.Expectations) {
        if result.isUnhandled {
            if expected.unhandled == nil {
                // The dispatcher's sentence says why: no store for the type, an unknown identifier, ...
                let reason = result.error.map { " \($0)" } ?? ""
                record("no store handled the action; expect that with $0.expectUnhandled().\(reason)")
            }
        } else if let location = expected.unhandled {
            let stores = result.outcomes.map { "'\($0.storeIdentifier)'" }.joined(separator: ", ")
            record("expected no store to handle the action, but it reached \(stores)", at: location)
        }
        if let error = result.error, !result.isUnhandled {
            record("the dispatch reported \(error)")
        }
        let named = expected.namedStores
        var reached: Set<String> = []
        for outcome in result.outcomes {
            let store = outcome.storeIdentifier
            reached.insert(store)
            let checked = exhaustivity == .on || named.contains(store)
            switch outcome.status {
            case .succeeded:
                if let location = expected.failures[store] {
                    record("expected the operation of store '\(store)' to fail, but it succeeded", at: location)
                }
                if let location = expected.cancellations[store] {
                    record("expected the operation of store '\(store)' to be cancelled, but it succeeded", at: location)
                }
            case .failed(let error):
                if expected.failures[store] == nil, checked {
                    record(
                        "the operation of store '\(store)' failed: \(error); "
                            + "expect that with $0.expectFailure(of: store)"
                    )
                }
                if let location = expected.cancellations[store] {
                    record(
                        "expected the operation of store '\(store)' to be cancelled, but it failed: \(error)",
                        at: location
                    )
                }
            case .cancelled:
                if expected.cancellations[store] == nil, checked {
                    record(
                        "the operation of store '\(store)' was cancelled; expect that with $0.expectCancelled(store)"
                    )
                }
                if let location = expected.failures[store] {
                    record("expected the operation of store '\(store)' to fail, but it was cancelled", at: location)
                }
            }
        }
        for (store, location) in expected.failures.sorted(by: { $0.key < $1.key }) where !reached.contains(store) {
            record("expected the operation of store '\(store)' to fail, but the action did not reach it", at: location)
        }
        for (store, location) in expected.cancellations.sorted(by: { $0.key < $1.key }) where !reached.contains(store) {
            record(
                "expected the operation of store '\(store)' to be cancelled, but the action did not reach it",
                at: location
            )
        }
    }

    private func checkStates(
        _ expected: DispatcherTester.Expectations,
        before: StoreStates,
        after: StoreStates,
        absorbedBy: String?,
        leftToReceive: Set<String>
    ) {
        for store in after.identifiers {
            guard let actual = after[store] else { continue }
            let previous = before[store]
            if let expectation = expected.states[store] {
                if !StateDiff.areEqual(expectation.state, actual) {
                    var differences = StateDiff.differences(expectation.state, actual)
                    if differences.isEmpty {
                        differences = [
                            Difference(
                                path: "",
                                lhs: StateDiff.render(expectation.state),
                                rhs: StateDiff.render(actual)
                            )
                        ]
                    }
                    let unchanged = previous.map { StateDiff.areEqual($0, actual) } == true
                    record(
                        "the state of store '\(store)' differs from the expectation"
                            + (unchanged ? " (the store did not change)" : "") + ":\n"
                            + StateDiff.render(differences, lhs: "expected", rhs: "actual"),
                        at: expectation.location
                    )
                } else if let previous, StateDiff.areEqual(previous, actual) {
                    let reason =
                        absorbedBy.map {
                            "it finished while \($0) was running, so that step already checked its changes"
                        } ?? "its state did not change"
                    record(
                        "expected store '\(store)' to change, but \(reason); remove the expectation",
                        at: expectation.location
                    )
                }
            } else if exhaustivity == .on, !leftToReceive.contains(store), let previous,
                !StateDiff.areEqual(previous, actual)
            {
                record(
                    "store '\(store)' changed, but no expectation names it; expect the change with "
                        + "$0.expect(store) { ... }:\n"
                        + StateDiff.render(StateDiff.differences(previous, actual), lhs: "before", rhs: "after")
                )
            }
        }
        for (store, expectation) in expected.states.sorted(by: { $0.key < $1.key }) where after[store] == nil {
            record(
                "expected a state of store '\(store)', but it was unregistered before the step ended",
                at: expectation.location
            )
        }
    }
}
