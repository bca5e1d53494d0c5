extension Store {
    /// The store's states as an asynchronous sequence: the current state, then each committed state
    /// in commit order, until the store is unregistered.
    ///
    /// The first element is the state when you call this; after it comes the state after every
    /// later commit (one per finished operation, restore or `updateState` outside an operation),
    /// exactly as observers see them, none twice and none out of order. The sequence ends when the
    /// store is unregistered from its dispatcher (or released); states committed after that by
    /// transactions still in flight are not delivered. Ending the iteration (leaving the loop,
    /// cancelling the task) ends the subscription.
    ///
    /// **Buffering.** Commits never wait for the consumer. States the consumer has not taken yet wait
    /// in a buffer of at most `limit` states; when it is full, the oldest waiting state is dropped to
    /// make room. A consumer that keeps up sees every state; one that falls behind skips
    /// intermediate states but always receives the latest one.
    ///
    /// ```swift
    /// for await state in store.states() {
    ///     print("count is now", state.count)
    /// }
    /// ```
    ///
    /// - Parameter limit: The most states waiting for the consumer; values below 1 count as 1.
    ///   The default, 128, absorbs bursts without holding many copies of a large state.
    /// - Returns: An `AsyncStream` of states.
    /// - Note: Safe to call from any thread; iterate the stream from one task.
    public func states(bufferingNewest limit: Int = 128) -> AsyncStream<State> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: State.self,
            bufferingPolicy: .bufferingNewest(max(1, limit))
        )
        let id = nextSubscriptionID()
        continuation.onTermination = { [weak self] _ in
            self?.removeSubscription(id: id)
        }
        let end: @Sendable () -> Void = { continuation.finish() }
        addStream(id: id, end: end) { current in
            continuation.yield(current)
            return ObserverEntry(id: id, object: nil, group: nil) { change in
                continuation.yield(Self.lent(change).state)
            }
        }
        return stream
    }
}
