extension Engine {
    /// Whether a shutdown began: the engine takes no new actions.
    var isClosed: Bool {
        state.withLockedValue { $0.isClosed }
    }

    /// Closes the engine to new actions and registrations (idempotent).
    ///
    /// - Returns: The lanes' run counts at the instant it closed.
    func close() -> (completed: Int, cancelled: Int) {
        state.withLockedValue { state in
            state.isClosed = true
            return laneCounts
        }
    }

    /// The lanes' run counts added up: completed, and cancelled by a shutdown.
    var laneCounts: (completed: Int, cancelled: Int) {
        lanes.reduce((0, 0)) { total, lane in
            let counts = lane.counts
            return (total.0 + counts.completed, total.1 + counts.cancelled)
        }
    }

    /// How many dispatches were rejected since the engine closed.
    var rejectedDispatches: Int {
        state.withLockedValue { $0.rejectedCount }
    }

    /// Cancels every queued or waiting run, and every one queued later.
    ///
    /// - Returns: How many waiting runs this cancelled (queued ones count as their lanes take them).
    func cancelInFlight() -> Int {
        for lane in lanes {
            lane.cancelQueuedRuns()
        }
        return suspendedRuns.cancelAll()
    }

    /// Gives up on every run still waiting for an operation, and on every one that starts waiting
    /// later: each completes now, with the stores still running reported as cancelled.
    ///
    /// - Returns: How many runs this gave up on.
    func giveUpInFlight() -> Int {
        suspendedRuns.giveUpAll()
    }
}
