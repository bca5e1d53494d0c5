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
