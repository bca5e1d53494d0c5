/// The handle `Store.subscribe(_:)` returns: the subscription lasts while you keep it.
///
/// Releasing the subscription, or calling ``ObserverToken/cancel()``, ends it, as with Combine's
/// `AnyCancellable`.
public final class Subscription: ObserverToken, @unchecked Sendable {
    // @unchecked: adds no stored property to `ObserverToken`, which is immutable and Sendable.

    deinit {
        cancel()
    }
}
