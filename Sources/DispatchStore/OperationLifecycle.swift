/// Where an ``ActionOperation`` stands: its phase, its result and who waits for it.
///
/// Kept behind the operation's lock.
struct OperationLifecycle {
    enum Phase {
        case ready
        case starting
        case executing
        case finishing
        case finished
    }

    var phase = Phase.ready
    var failure: (any Error)?
    var claimedByDispatcher = false
    var runningInline = false
    var didRunBody = false
    var finishHook: ((StoreOutcome.Status, Bool) -> Void)?
    var cancellationHandlers: [@Sendable () -> Void] = []
    var cancellationSeen = false

    /// How the operation ended, once finished.
    func status(isCancelled: Bool) -> StoreOutcome.Status {
        if let failure { return .failed(failure) }
        return isCancelled ? .cancelled : .succeeded
    }
}
