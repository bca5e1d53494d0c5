/// What a ``Dispatcher/shutdown(_:timeout:)`` did.
public struct ShutdownReport: Sendable, Hashable, CustomStringConvertible {
    /// How many queued transactions (`.async`, `.serial`, `.mainThread`) finished while the shutdown
    /// waited, whichever way they finished.
    public let finished: Int
    /// How many of them the shutdown cancelled (the ``ShutdownPolicy/cancel`` policy, or the timeout).
    public let cancelled: Int
    /// How many dispatches were rejected from the start of the first shutdown until this report.
    public let rejected: Int
    /// Whether the timeout passed with transactions still in flight (they were then cancelled).
    public let timedOut: Bool
    /// How many transactions the shutdown abandoned: still running when the timeout had passed
    /// twice, because an operation ignored cancellation.
    ///
    /// Each got its completion before the shutdown returned, with the stores still running
    /// reported as cancelled and an error with code ``DispatchError/Code/timedOut``; their
    /// operations finishing later reach no completion and commit nothing. Counted in
    /// ``finished`` and ``cancelled`` as well.
    public let abandoned: Int
    /// Whether nothing was left in flight when the report was made.
    public let isIdle: Bool
    /// How long the shutdown took.
    public let duration: Duration

    /// Creates a report; the dispatcher creates these, tests may too.
    ///
    /// - Parameters:
    ///   - finished: Transactions that finished during the shutdown.
    ///   - cancelled: How many of them the shutdown cancelled.
    ///   - rejected: Dispatches rejected since the shutdown began.
    ///   - timedOut: Whether the timeout passed.
    ///   - isIdle: Whether nothing was left in flight.
    ///   - duration: How long the shutdown took.
    ///   - abandoned: How many transactions the shutdown abandoned.
    public init(
        finished: Int,
        cancelled: Int,
        rejected: Int,
        timedOut: Bool,
        isIdle: Bool,
        duration: Duration,
        abandoned: Int = 0
    ) {
        self.finished = finished
        self.cancelled = cancelled
        self.rejected = rejected
        self.timedOut = timedOut
        self.isIdle = isIdle
        self.duration = duration
        self.abandoned = abandoned
    }

    /// A line such as `shutdown: 12 transactions finished (0 cancelled), 1 dispatch rejected, idle`.
    public var description: String {
        func count(_ value: Int, _ noun: String, _ plural: String) -> String {
            "\(value) \(value == 1 ? noun : plural)"
        }
        let state = isIdle ? "idle" : "not idle"
        let abandoned = abandoned > 0 ? ", \(abandoned) abandoned" : ""
        return
            "shutdown: \(count(finished, "transaction", "transactions")) finished (\(cancelled) cancelled\(abandoned)), "
            + "\(count(rejected, "dispatch", "dispatches")) rejected, \(timedOut ? "timed out, " : "")\(state)"
    }
}
