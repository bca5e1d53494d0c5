/// The handle `Store.register(observer:callback:)` returns: ends the observation early when cancelled.
///
/// The observation already ends when the observer object is released, so keeping the token is
/// optional; releasing it does not end anything.
public final class ObserverToken: Sendable {
    private let cancellation: Cancellation

    @usableFromInline
    init(_ cancellation: Cancellation) {
        self.cancellation = cancellation
    }

    /// Stops the callback; calling it again does nothing.
    ///
    /// - Note: Safe from any thread. A delivery already running on another thread may still call the
    ///   callback once.
    public func cancel() {
        cancellation.run()
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool {
        cancellation.hasRun
    }
}

/// The handle `Store.subscribe(_:)` returns: the subscription lasts while you keep it.
///
/// Releasing the subscription, or calling ``cancel()``, ends it, as with Combine's `AnyCancellable`.
public final class Subscription: Sendable {
    private let cancellation: Cancellation

    @usableFromInline
    init(_ cancellation: Cancellation) {
        self.cancellation = cancellation
    }

    deinit {
        cancellation.run()
    }

    /// Ends the subscription; calling it again does nothing.
    ///
    /// - Note: Safe from any thread. A delivery already running on another thread may still call the
    ///   callback once.
    public func cancel() {
        cancellation.run()
    }

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool {
        cancellation.hasRun
    }
}

/// An action that runs at most once.
@usableFromInline
final class Cancellation: Sendable {
    private let action: Locked<(@Sendable () -> Void)?>

    @usableFromInline
    init(_ action: @escaping @Sendable () -> Void) {
        self.action = Locked(action)
    }

    var hasRun: Bool {
        action.withLock { $0 == nil }
    }

    func run() {
        let pending = action.withLock { action in
            defer { action = nil }
            return action
        }
        pending?()
    }
}

private let subscriptionIDs = Locked<UInt64>(0)

@usableFromInline
func nextSubscriptionID() -> UInt64 {
    subscriptionIDs.withLock { value in
        value += 1
        return value
    }
}
