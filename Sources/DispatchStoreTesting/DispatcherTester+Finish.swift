import DispatchStore
import Foundation
public import Testing

extension DispatcherTester {
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
}
