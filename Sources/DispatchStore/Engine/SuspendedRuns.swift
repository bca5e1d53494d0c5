/// The runs suspended until an operation finishes, so that a shutdown can cancel or abandon them
/// (and later ones).
final class SuspendedRuns: Sendable {
    /// What the shutdown does to suspended runs.
    enum Policy {
        case none
        case cancel
        case abandon
    }

    private struct State {
        var runs: [ObjectIdentifier: TransactionRun.Reference] = [:]
        var policy = Policy.none
    }

    private let state = LockedBox(State())

    /// Adds a run suspended for an operation, and returns the shutdown's policy, to apply to it now.
    func add(_ run: TransactionRun) -> Policy {
        state.withLockedValue { state in
            state.runs[ObjectIdentifier(run)] = TransactionRun.Reference(run: run)
            return state.policy
        }
    }

    /// Removes a run that completed.
    func remove(_ run: TransactionRun) { state.withLockedValue { $0.runs[ObjectIdentifier(run)] = nil } }

    /// Cancels every suspended run, and every run that suspends from now on; returns how many it cancelled.
    func cancelAll() -> Int {
        let runs = state.withLockedValue { state in
            if state.policy == .none { state.policy = .cancel }
            return Array(state.runs.values)
        }
        return runs.reduce(0) { count, reference in reference.run.requestCancel() ? count + 1 : count }
    }

    /// Abandons every suspended run, and every run that suspends from now on (each finishes now,
    /// its stores still running reported cancelled); returns how many it abandoned.
    func abandonAll() -> Int {
        let runs = state.withLockedValue { state in
            state.policy = .abandon
            return Array(state.runs.values)
        }
        return runs.reduce(0) { count, reference in reference.run.abandon(.shutdown) ? count + 1 : count }
    }
}
