/// The queued runs that wait for an operation (they left their lane), so that a shutdown can
/// cancel them; once cancelling, runs that start waiting later are cancelled as they register.
final class SuspendedRuns: Sendable {
    private let state = LockedBox<(runs: [ObjectIdentifier: TransactionRun], cancelling: Bool)>(([:], false))

    /// Adds a run that waits for an operation.
    ///
    /// - Returns: Whether the run must cancel itself (a shutdown is cancelling everything).
    func add(_ run: TransactionRun) -> Bool {
        state.withLockedValue { state in
            state.runs[ObjectIdentifier(run)] = run
            return state.cancelling
        }
    }

    /// Removes a run that completed.
    func remove(_ run: TransactionRun) {
        state.withLockedValue { state in
            state.runs[ObjectIdentifier(run)] = nil
        }
    }

    /// Cancels every waiting run, and every run that starts waiting from now on.
    ///
    /// - Returns: How many runs the call cancelled.
    func cancelAll() -> Int {
        let runs = state.withLockedValue { state in
            state.cancelling = true
            return Array(state.runs.values)
        }
        return runs.reduce(0) { count, run in run.requestCancel() ? count + 1 : count }
    }
}
