/// The runs that wait for an operation, so that a shutdown can cancel or give up on them (and on later ones).
final class SuspendedRuns: Sendable {
    /// What the shutdown does to waiting runs.
    enum Policy {
        case none
        case cancel
        case giveUp
    }

    private struct State {
        var runs: [ObjectIdentifier: TransactionRun.Reference] = [:]
        var policy = Policy.none
    }

    private let state = LockedBox(State())

    /// Adds a run that waits for an operation, and returns the shutdown's policy, to apply to it now.
    func add(_ run: TransactionRun) -> Policy {
        state.withLockedValue { state in
            state.runs[ObjectIdentifier(run)] = TransactionRun.Reference(run: run)
            return state.policy
        }
    }

    /// Removes a run that completed.
    func remove(_ run: TransactionRun) { state.withLockedValue { $0.runs[ObjectIdentifier(run)] = nil } }

    /// Cancels every waiting run, and every run that starts waiting from now on; returns how many it cancelled.
    func cancelAll() -> Int {
        let runs = state.withLockedValue { state in
            if state.policy == .none { state.policy = .cancel }
            return Array(state.runs.values)
        }
        return runs.reduce(0) { count, reference in reference.run.requestCancel() ? count + 1 : count }
    }

    /// Gives up on every waiting run, and every run that starts waiting from now on (each completes now,
    /// its stores still running reported cancelled); returns how many it gave up on.
    func giveUpAll() -> Int {
        let runs = state.withLockedValue { state in
            state.policy = .giveUp
            return Array(state.runs.values)
        }
        return runs.reduce(0) { count, reference in reference.run.giveUp(.shutdown) ? count + 1 : count }
    }
}
