import Foundation

/// Executes one dispatch: starts each reached store's operation in dependency order, reports each
/// end to the observers and middleware, then calls the middleware's `didFinish` and the completion
/// exactly once.
///
/// A run suspends when an operation does not finish right away and is resumed by that operation's
/// finish, on its executor: the waiting caller for `.sync`, its lane otherwise. Only one thread
/// drives a run at a time (`isDriving`).
final class TransactionRun: LaneJob, TransactionControl, @unchecked Sendable {
    // @unchecked: the mutable state below is guarded by `lock`; the rest is immutable after init.

    enum Executor: Sendable {
        /// A `.sync` caller waiting on the semaphore; it drives the run itself.
        case caller(DispatchSemaphore)
        /// A lane that drives the run.
        case lane(Lane)
    }

    private enum Phase {
        case waiting
        case running
        case finished
        case reported
    }

    private struct Unit {
        var phase = Phase.waiting
        var announced = false
        var operation: Operation?
        var status: StoreOutcome.Status?
        var needsDelivery = false
    }

    private enum Step {
        case start(Int, [Operation])
        case report(Int, announced: Bool, needsDelivery: Bool)
        case complete
        case suspend
    }

    private unowned let dispatcher: Dispatcher
    private let action: any ActionType
    private let route: Route?
    private let middleware: [any Middleware]
    private let completion: (@Sendable (DispatchResult) -> Void)?
    private let timeout: Duration?
    private let routingError: DispatchError?
    /// The transaction without its control (which would be a cycle); see `transaction`.
    private let plainTransaction: Transaction
    let executor: Executor

    private let lock = Lock()
    // Guarded by `lock`.
    private var units: [Unit]
    private var isDriving = true
    private var cancelRequested = false
    private var expiredStores: [String]?
    private var isComplete = false
    private var deadline: DispatchTime?
    private var timerArmed = false

    init(
        dispatcher: Dispatcher,
        action: any ActionType,
        route: Route?,
        transaction: Transaction,
        middleware: [any Middleware],
        timeout: Duration?,
        routingError: DispatchError?,
        executor: Executor,
        completion: (@Sendable (DispatchResult) -> Void)?
    ) {
        self.dispatcher = dispatcher
        self.action = action
        self.route = route
        self.plainTransaction = transaction
        self.middleware = middleware
        self.timeout = timeout
        self.routingError = routingError
        self.executor = executor
        self.completion = completion
        self.units = Array(repeating: Unit(), count: route?.receivers.count ?? 0)
    }

    /// The transaction as handed out (to the caller, middleware and the completion): able to cancel this run.
    var transaction: Transaction {
        var handle = plainTransaction
        handle.control = self
        return handle
    }

    // MARK: TransactionControl

    func cancel() {
        let running: [Operation] = lock.withLock {
            guard !isComplete, !cancelRequested else { return [] }
            cancelRequested = true
            return units.compactMap { $0.phase == .running ? $0.operation : nil }
        }
        for operation in running {
            operation.cancel()
        }
    }

    // MARK: Driving

    /// Runs a `.sync` transaction to the end on the calling thread.
    func runOnCaller() {
        guard case .caller(let semaphore) = executor else {
            preconditionFailure("DispatchStore: runOnCaller() on a transaction owned by a lane")
        }
        while drive() == .suspended {
            if let deadline = lock.withLock({ deadline }) {
                if semaphore.wait(timeout: deadline) == .timedOut { expire() }
            } else {
                semaphore.wait()
            }
        }
    }

    func drive() -> DriveResult {
        let context = ThreadContext.current
        while true {
            switch nextStep() {
            case .start(let index, let dependencies):
                start(index, dependencies: dependencies, context: context)
            case .report(let index, let announced, let needsDelivery):
                report(index, announced: announced, needsDelivery: needsDelivery)
            case .complete:
                complete()
                return .completed
            case .suspend:
                return .suspended
            }
        }
    }

    private func nextStep() -> Step {
        lock.lock()
        defer { lock.unlock() }
        if deadline == nil, let timeout {
            deadline = .now() + timeout.dispatchInterval
        }
        var allReported = true
        for index in units.indices {
            switch units[index].phase {
            case .reported:
                continue
            case .finished:
                units[index].phase = .reported
                return .report(index, announced: units[index].announced, needsDelivery: units[index].needsDelivery)
            case .running:
                allReported = false
            case .waiting:
                allReported = false
                if cancelRequested || expiredStores != nil {
                    units[index].phase = .reported
                    units[index].status = .cancelled
                    return .report(index, announced: false, needsDelivery: false)
                }
                var ready = true
                var dependencyFailed = false
                var operations: [Operation] = []
                for dependency in route?.dependencies[index] ?? [] {
                    guard units[dependency].phase == .reported else {
                        ready = false
                        break
                    }
                    if units[dependency].status?.isFinished != true { dependencyFailed = true }
                    if let operation = units[dependency].operation { operations.append(operation) }
                }
                guard ready else { continue }
                if dependencyFailed {
                    units[index].phase = .reported
                    units[index].status = .cancelled
                    return .report(index, announced: false, needsDelivery: false)
                }
                units[index].phase = .running
                units[index].announced = true
                return .start(index, operations)
            }
        }
        if allReported {
            isComplete = true
            return .complete
        }
        isDriving = false
        armTimerIfNeeded()
        return .suspend
    }

    private func start(_ index: Int, dependencies: [Operation], context: ThreadContext) {
        guard let receiver = route?.receivers[index] else { return }
        for middleware in middleware {
            middleware.willDispatch(transaction: transaction, action: transaction.action, in: receiver)
        }
        let start = withUnsafeActionPointer(to: action) { action in
            receiver.beginUnit(action, dependencies: dependencies, context: context) {
                { [self] status in unitFinished(index, status: status) }
            }
        }
        // A cancel or a timeout may have come while the operation started, before it was recorded
        // here for them to find: then cancel it now.
        let cancelNow: Bool = lock.withLock {
            units[index].operation = start.operation
            guard let status = start.status else {
                return cancelRequested || units[index].phase != .running
            }
            if units[index].phase == .running {
                units[index].phase = .finished
                units[index].status = status
                units[index].needsDelivery = start.needsDelivery
            }
            return false
        }
        if cancelNow { start.operation?.cancel() }
    }

    private func report(_ index: Int, announced: Bool, needsDelivery: Bool) {
        guard let receiver = route?.receivers[index] else { return }
        if !announced {
            for middleware in middleware {
                middleware.willDispatch(transaction: transaction, action: transaction.action, in: receiver)
            }
        }
        if needsDelivery { receiver.deliverPendingChanges() }
        for middleware in middleware {
            middleware.didDispatch(transaction: transaction, action: transaction.action, in: receiver)
        }
    }

    private func complete() {
        let (outcomes, expired) = lock.withLock {
            (
                units.indices.map { index in
                    StoreOutcome(
                        storeIdentifier: route?.receivers[index].identifier ?? "",
                        status: units[index].status ?? .cancelled
                    )
                },
                expiredStores
            )
        }
        var error = routingError
        if let expired, let timeout { error = .timedOut(expired, after: timeout) }
        let result = DispatchResult(transaction: transaction, outcomes: outcomes, error: error)
        for middleware in middleware {
            middleware.didFinish(result, in: dispatcher)
        }
        completion?(result)
    }

    /// Called, once per unit, when an operation that was still running finishes (on any thread).
    private func unitFinished(_ index: Int, status: StoreOutcome.Status) {
        let (resume, late) = lock.withLock {
            guard units[index].phase == .running else {
                // Already given up on (timed out): only its observers remain to be told.
                return (false, true)
            }
            units[index].phase = .finished
            units[index].status = status
            units[index].needsDelivery = true
            guard !isDriving else { return (false, false) }
            isDriving = true
            return (true, false)
        }
        if late { route?.receivers[index].deliverPendingChanges() }
        if resume { resumeOnExecutor() }
    }

    /// Gives up on the operations still running: they are cancelled and reported as such.
    func expire() {
        let (running, resume) = lock.withLock {
            guard !isComplete, expiredStores == nil else { return ([Operation](), false) }
            var running: [Operation] = []
            var identifiers: [String] = []
            for index in units.indices where units[index].phase == .running {
                units[index].phase = .finished
                units[index].status = .cancelled
                units[index].needsDelivery = true
                if let operation = units[index].operation { running.append(operation) }
                identifiers.append(route?.receivers[index].identifier ?? "")
            }
            expiredStores = identifiers
            guard !isDriving else { return (running, false) }
            isDriving = true
            return (running, true)
        }
        for operation in running {
            operation.cancel()
        }
        if resume { resumeOnExecutor() }
    }

    private func resumeOnExecutor() {
        switch executor {
        case .caller(let semaphore):
            semaphore.signal()
        case .lane(let lane):
            lane.resume(self)
        }
    }

    /// Call with `lock` held, when suspending.
    private func armTimerIfNeeded() {
        guard let deadline, !timerArmed, case .lane = executor else { return }
        timerArmed = true
        OperationQueues.timers.asyncAfter(deadline: deadline) { [weak self] in
            self?.expire()
        }
    }
}

extension Duration {
    /// The duration as a `DispatchTimeInterval` in nanoseconds (saturating).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, seconds >= 0 else { return seconds < 0 ? .nanoseconds(0) : .never }
        let total = nanoseconds.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !total.overflow, total.partialValue <= Int64(Int.max) else { return .never }
        return .nanoseconds(Int(total.partialValue))
    }
}
