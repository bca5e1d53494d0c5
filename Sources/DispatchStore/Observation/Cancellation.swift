/// An action that runs at most once.
@usableFromInline
final class Cancellation: Sendable {
    private let action: LockedBox<(@Sendable () -> Void)?>

    @usableFromInline
    init(_ action: @escaping @Sendable () -> Void) {
        self.action = LockedBox(action)
    }

    var hasRun: Bool {
        action.withLockedValue { $0 == nil }
    }

    func run() {
        let pending = action.withLockedValue { action in
            defer { action = nil }
            return action
        }
        pending?()
    }
}

private let subscriptionIDs = LockedBox<UInt64>(0)

@usableFromInline
func nextSubscriptionID() -> UInt64 {
    subscriptionIDs.withLockedValue { value in
        value += 1
        return value
    }
}
