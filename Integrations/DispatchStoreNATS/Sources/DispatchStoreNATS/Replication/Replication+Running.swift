@_spi(DispatchStoreNATS) import DispatchStore
import Foundation

extension Replication {
    /// How far this replica is behind the stream now: the stream's last message as far as it knows,
    /// the last it applied, and how long ago it applied one.
    public var lag: Lag {
        applier.lag
    }

    /// The replica's lag now, then after each message it applies or learns of, until it stops.
    ///
    /// A slow reader sees the newest value, not every one.
    ///
    /// ```swift
    /// for await lag in replication.lagUpdates() where lag.behind > 1_000 {
    ///     logger.warning("replica behind: \(lag)")
    /// }
    /// ```
    ///
    /// - Returns: A sequence that ends when the replica fails or is closed.
    public func lagUpdates() -> AsyncStream<Lag> {
        applier.lagUpdates()
    }

    /// The problem that stopped the replica, or `nil` while it runs.
    ///
    /// A stopped replica applies nothing more and refuses performs; its stores keep refusing
    /// outside changes. Start a new ``Replication`` (after fixing the cause) to go on.
    public var failure: ReplicationError? {
        applier.failure
    }

    /// How many dispatches that reached a replicated store without going through the stream were
    /// refused.
    public var refusedDispatches: Int {
        guardian.refusedCount
    }

    /// Stops applying messages, fails the performs still waiting, and closes the connection.
    ///
    /// The stores keep the state of the last message applied and take changes from anywhere again:
    /// they are no longer replicas. Calling it again does nothing.
    public func close() async {
        guard
            closed.withLock({ closed in
                defer { closed = true }
                return !closed
            })
        else { return }
        let applier = applier
        _ = try? await BlockingCalls.run { () throws(NATSError) in applier.stop(because: nil) }
        dispatcher.unregister(middleware: guardian)
        for identifier in storeIdentifiers {
            dispatcher.store(with: identifier)?.outsideChangeRefusal = nil
        }
        await connection.close()
    }

    /// Runs until the task running it is cancelled, then closes the replica: the shape of
    /// swift-service-lifecycle's `Service`.
    ///
    /// It waits for the cancellation or the replica's failure, whichever comes first; it returns
    /// at once when the replica was closed already.
    ///
    /// - Throws: The failure that stopped the replica, if one does first (the replica is then
    ///   closed too).
    public func run() async throws {
        do {
            // No message has this number: the wait ends with the cancellation or the replica's end.
            try await applier.waitUntilApplied(through: .max, deadline: nil)
        } catch {
            await close()
            if let failure = applier.failure { throw failure }
        }
    }
}
