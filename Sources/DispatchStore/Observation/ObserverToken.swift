/// The handle `Store.register(observer:callback:)` returns: ends the observation early when cancelled.
///
/// The observation already ends when the observer object is released, so keeping the token is
/// optional; releasing it does not end anything. ``Subscription`` is the token that also ends its
/// observation when released.
public class ObserverToken: @unchecked Sendable {
    // @unchecked: not final, only so that `Subscription` can extend it inside this module (the class
    // is not open); its one stored property is an immutable, Sendable `Cancellation`.
    private let cancellation: Cancellation

    @usableFromInline
    init(_ cancellation: Cancellation) {
        self.cancellation = cancellation
    }

    /// Ends the observation; calling it again does nothing.
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
