import Foundation

/// Executes one dispatch: starts each reached store's operation in dependency order, reports each
/// end to the observers and middleware, then calls the middleware's `didFinish` and the completion
/// exactly once.
///
/// A run first takes a fast path: it starts the stores' operations one after the other on the
/// driving thread, keeping no per-store state, as long as each finishes right away (every inline
/// reduction does). When an operation does not, the run moves its progress into `units` and goes on
/// as a state machine: it suspends, and that operation's finish resumes it on its executor (the
/// waiting caller for `.sync`, its lane otherwise); stores that do not wait for the running one
/// start meanwhile. Only one thread drives a run at a time (`isDriving`).
final class TransactionRun: TransactionControl, @unchecked Sendable {
    // @unchecked: the mutable state below is guarded by `lock`.

    enum Executor: Sendable {
        /// A `.sync` caller, which drives the run itself and waits on a semaphore when it suspends.
        case caller
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

    /// Not reference counted: a run is driven while its dispatcher is alive (a `.sync` caller is
    /// inside one of its methods; a lane keeps it alive while it has work).
    private unowned(unsafe) let dispatcher: Dispatcher
    private let id: UInt64
    private let action: any ActionType
    private let mode: DispatchMode
    /// Not reference counted, so that the thread running the transaction does not touch the counts
    /// of the thread that dispatched it: the dispatcher keeps every route that a run may use alive
    /// (the dispatching caller holds it until the run is driven or queued; a replaced registry is
    /// kept until the lanes are idle).
    private unowned(unsafe) let route: Route?
    private let targetIdentifier: String?
    private let middleware: [any Middleware]
    private let completion: (@Sendable (DispatchResult) -> Void)?
    private let timeout: Duration?
    private let routingError: DispatchError?
    let executor: Executor
    /// A lock shared with unrelated runs, so that a run costs one allocation. The pool's locks live
    /// as long as the process, so holding one needs no reference count.
    private unowned(unsafe) let lock: Lock

    // Guarded by `lock`, which makes the dynamic exclusivity check redundant.
    /// Each store's progress, once the run left the fast path; empty before.
    @exclusivity(unchecked) private var units: [Unit] = []
    @exclusivity(unchecked) private var isDriving = true
    @exclusivity(unchecked) private var cancelRequested = false
    @exclusivity(unchecked) private var expiredStores: [String]?
    @exclusivity(unchecked) private var isComplete = false
    @exclusivity(unchecked) private var deadline: DispatchTime?
    @exclusivity(unchecked) private var timerArmed = false
    @exclusivity(unchecked) private var callerSignal: DispatchSemaphore?

    init(
        dispatcher: Dispatcher,
        id: UInt64,
        action: any ActionType,
        mode: DispatchMode,
        route: Route?,
        targetIdentifier: String?,
        middleware: [any Middleware],
        timeout: Duration?,
        routingError: DispatchError?,
        executor: Executor,
        completion: (@Sendable (DispatchResult) -> Void)?
    ) {
        self.dispatcher = dispatcher
        self.id = id
        self.action = action
        self.mode = mode
        self.route = route
        self.targetIdentifier = targetIdentifier
        self.middleware = middleware
        self.timeout = timeout
        self.routingError = routingError
        self.executor = executor
        self.completion = completion
        self.lock = LockPool.lock(for: id)
    }

    /// The transaction as handed out (to the caller, middleware and the completion): able to cancel this run.
    var transaction: Transaction {
        var transaction = Transaction(
            id: id,
            action: action,
            mode: mode,
            route: route,
            targetIdentifier: targetIdentifier
        )
        transaction.control = self
        return transaction
    }

    /// Whether someone reads the result: the completion or a middleware's `didFinish`.
    private var needsResult: Bool {
        completion != nil || !middleware.isEmpty
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
        while drive() == .suspended {
            let (semaphore, waitUntil) = lock.withLock { () -> (DispatchSemaphore, DispatchTime?) in
                if callerSignal == nil { callerSignal = DispatchSemaphore(value: 0) }
                return (callerSignal!, deadline)
            }
            if let waitUntil {
                if semaphore.wait(timeout: waitUntil) == .timedOut { expire() }
            } else {
                semaphore.wait()
            }
        }
    }

    func drive() -> DriveResult {
        let context = ThreadContext.current
        lock.lock()
        if deadline == nil, let timeout { deadline = .now() + timeout.dispatchInterval }
        let onFastPath = units.isEmpty
        let stopped = cancelRequested || expiredStores != nil
        lock.unlock()
        if onFastPath, let result = driveFast(context: context, stoppedBeforeFirst: stopped) {
            return result
        }
        return driveStateMachine(context: context)
    }

    /// Starts the stores' operations one after the other while each finishes right away.
    ///
    /// - Returns: `.completed`, or `nil` when an operation is still running: the run has moved its
    ///   progress into `units` and goes on as a state machine.
    private func driveFast(context: ThreadContext, stoppedBeforeFirst: Bool) -> DriveResult? {
        guard let route else {
            complete(outcomes: [])
            return .completed
        }
        let count = route.receivers.count
        let tracksDependencies = route.hasDependencies
        var operations: [Operation?] = tracksDependencies ? Array(repeating: nil, count: count) : []
        var failed: [Bool] = tracksDependencies ? Array(repeating: false, count: count) : []
        var outcomes: [StoreOutcome] = []
        for index in 0..<count {
            let receiver = route.receivers[index]
            var stopped = stoppedBeforeFirst
            if index > 0 {
                lock.lock()
                stopped = cancelRequested || expiredStores != nil
                lock.unlock()
            }
            let blocked = tracksDependencies && route.dependencies[index].contains { failed[$0] }
            if !middleware.isEmpty { announce(receiver) }
            var status = StoreOutcome.Status.cancelled
            if !stopped && !blocked {
                let dependencies = tracksDependencies ? route.dependencies[index].compactMap { operations[$0] } : []
                var suspended = false
                let start = withUnsafeActionPointer(to: action) { action in
                    receiver.beginUnit(action, dependencies: dependencies, context: context) {
                        suspended = true
                        moveToStateMachine(running: index, outcomes: outcomes, operations: operations, failed: failed)
                        return { [self] status in unitFinished(index, status: status) }
                    }
                }
                if suspended {
                    record(start, for: index)
                    return nil
                }
                status = start.status ?? .cancelled
                if tracksDependencies { operations[index] = start.operation }
                if start.needsDelivery { receiver.deliverPendingChanges() }
            }
            if tracksDependencies { failed[index] = !status.isFinished }
            if !middleware.isEmpty { reportDispatched(receiver) }
            if needsResult { outcomes.append(StoreOutcome(storeIdentifier: receiver.identifier, status: status)) }
        }
        complete(outcomes: outcomes)
        return .completed
    }

    /// Moves the fast path's progress into `units`: the stores before `running` are reported, the
    /// one at `running` runs.
    private func moveToStateMachine(running: Int, outcomes: [StoreOutcome], operations: [Operation?], failed: [Bool]) {
        let count = route?.receivers.count ?? 0
        lock.withLock {
            units = (0..<count).map { index in
                guard index <= running else { return Unit() }
                guard index < running else { return Unit(phase: .running, announced: true) }
                var status = StoreOutcome.Status.finished
                if index < outcomes.count {
                    status = outcomes[index].status
                } else if index < failed.count, failed[index] {
                    status = .cancelled
                }
                let operation = index < operations.count ? operations[index] : nil
                return Unit(phase: .reported, announced: true, operation: operation, status: status)
            }
        }
    }

    private func driveStateMachine(context: ThreadContext) -> DriveResult {
        while true {
            switch nextStep() {
            case .start(let index, let dependencies):
                start(index, dependencies: dependencies, context: context)
            case .report(let index, let announced, let needsDelivery):
                report(index, announced: announced, needsDelivery: needsDelivery)
            case .complete:
                let outcomes = lock.withLock {
                    units.indices.map { index in
                        StoreOutcome(
                            storeIdentifier: route?.receivers[index].identifier ?? "",
                            status: units[index].status ?? .cancelled
                        )
                    }
                }
                complete(outcomes: outcomes)
                return .completed
            case .suspend:
                return .suspended
            }
        }
    }

    private func nextStep() -> Step {
        lock.lock()
        defer { lock.unlock() }
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
        if !middleware.isEmpty { announce(receiver) }
        let start = withUnsafeActionPointer(to: action) { action in
            receiver.beginUnit(action, dependencies: dependencies, context: context) {
                { [self] status in unitFinished(index, status: status) }
            }
        }
        record(start, for: index)
    }

    /// Records how unit `index` started. A cancel or a timeout may have come while the operation
    /// started, before it was recorded here for them to find: then it is cancelled now.
    private func record(_ start: UnitStart, for index: Int) {
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
        if !announced && !middleware.isEmpty { announce(receiver) }
        if needsDelivery { receiver.deliverPendingChanges() }
        if !middleware.isEmpty { reportDispatched(receiver) }
    }

    /// Calls every middleware's `willDispatch` for `receiver`.
    private func announce(_ receiver: any StoreEntry) {
        let transaction = transaction
        for middleware in middleware {
            middleware.willDispatch(transaction: transaction, action: transaction.action, in: receiver)
        }
    }

    /// Calls every middleware's `didDispatch` for `receiver`.
    private func reportDispatched(_ receiver: any StoreEntry) {
        let transaction = transaction
        for middleware in middleware {
            middleware.didDispatch(transaction: transaction, action: transaction.action, in: receiver)
        }
    }

    private func complete(outcomes: [StoreOutcome]) {
        guard needsResult else { return }
        var error = routingError
        if let expired = lock.withLock({ expiredStores }), let timeout { error = .timedOut(expired, after: timeout) }
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
        case .caller:
            let semaphore = lock.withLock {
                if callerSignal == nil { callerSignal = DispatchSemaphore(value: 0) }
                return callerSignal!
            }
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
