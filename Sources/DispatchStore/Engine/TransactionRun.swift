import Foundation

/// Executes one dispatch: starts each reached store's operation in dependency order, reports each
/// end to the observers and middleware, then calls the middleware's `didFinish` and the completion
/// exactly once.
///
/// A run first takes a fast path: it starts the stores' operations one after the other on the
/// driving thread, keeping no per-store state, as long as each finishes right away (every inline
/// reduction does). When an operation does not, the run moves its progress into `units` and goes on
/// as a state machine: it suspends, and that operation's finish resumes it (the waiting `.sync`
/// caller, or its lane); stores that do not wait for the running one start meanwhile. Only one
/// thread drives a run at a time (`isDriving`).
///
/// Runs are created for every queued dispatch, so they are kept small: what is rarely needed lives in
/// `details` (immutable) and `machine` (created on demand).
final class TransactionRun: TransactionControl, @unchecked Sendable {
    // @unchecked: the mutable state below is guarded by `lock`.

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

    /// The state machine's state, created when the run leaves the fast path, waits or has a deadline.
    private final class Machine {
        /// Each store's progress, once the run left the fast path; empty before.
        var units: [Unit] = []
        var deadline: DispatchTime?
        var timerArmed = false
        var expiredStores: [String]?
        var callerSignal: DispatchSemaphore?
    }

    /// What the run executes.
    ///
    /// Set by `configure`, when the run is created or reused from its lane's
    /// spare runs, while the configuring thread owns it exclusively; read by whoever drives it after
    /// that (the lane's lock orders the two). Not checked dynamically for exclusivity: every
    /// dispatch reads it (S1, S4).
    @exclusivity(unchecked) private var configuration: RunConfiguration
    /// The lane that drives the run, or `nil` for a run driven by its `.sync` caller.
    ///
    /// Weak: the lane keeps its spare runs.
    private weak var lane: Lane?
    /// Whether a lane drives the run.
    private let isQueued: Bool
    /// A lock shared with unrelated runs, so that a run costs one allocation.
    private let lock: Lock

    // Guarded by `lock`, which makes the dynamic exclusivity check redundant.
    @exclusivity(unchecked) private var machine: Machine?
    @exclusivity(unchecked) private var isDriving = true
    @exclusivity(unchecked) private var cancelRequested = false
    @exclusivity(unchecked) private var isComplete = false

    init(lane: Lane?, configuration: RunConfiguration) {
        self.lane = lane
        self.isQueued = lane != nil
        self.configuration = configuration
        self.lock = LockPool.lock(for: configuration.id)
        cancelRequested = configuration.startsCancelled
    }

    /// Sets what the run executes and resets its progress; the caller owns the run exclusively.
    func configure(_ configuration: RunConfiguration) {
        self.configuration = configuration
        machine = nil
        isDriving = true
        cancelRequested = configuration.startsCancelled
        isComplete = false
    }

    /// Whether the run can be reused once it completed.
    ///
    /// It can when it never left the fast path: no other thread (a finish hook, a timer) can still
    /// refer to it then. Ask from the thread that drove it.
    var isReusable: Bool {
        machine == nil
    }

    /// Drops what the run refers to, before it waits among its lane's spare runs.
    ///
    /// Under the run's lock: the last other holder may have called `cancel()`, which used that
    /// lock, before releasing its reference; taking it orders those accesses before the reuse.
    func clearForReuse() {
        lock.withLock {
            configuration.middleware = []
            configuration.owner = nil
            configuration.completion = nil
            configuration.details = nil
            configuration.route = nil
            configuration.targetIdentifier = nil
        }
    }

    private var route: Route? { configuration.route }
    private var middleware: [any Middleware] { configuration.middleware }
    private var details: RunConfiguration.Details? { configuration.details }

    /// The transaction as handed out (to the caller, middleware and the completion): able to cancel this run.
    var transaction: Transaction {
        var transaction = Transaction(
            id: configuration.id,
            action: configuration.action,
            mode: configuration.mode,
            route: configuration.route,
            targetIdentifier: configuration.targetIdentifier
        )
        transaction.control = self
        return transaction
    }

    /// Whether someone reads the result: the completion or a middleware's `didFinish`.
    private var needsResult: Bool {
        configuration.completion != nil || !middleware.isEmpty
    }

    /// The state machine's state, created if needed; call with `lock` held.
    private var machineLocked: Machine {
        if let machine { return machine }
        let created = Machine()
        machine = created
        return created
    }

    private var unitsAreEmptyLocked: Bool {
        machine?.units.isEmpty ?? true
    }

    // MARK: TransactionControl

    func cancel() {
        requestCancel()
    }

    /// Cancels the run's operations that have not finished yet.
    ///
    /// - Returns: Whether this call cancelled the run: `false` when it had completed or was cancelled
    ///   already, or reaches no store.
    @discardableResult
    func requestCancel() -> Bool {
        let (cancelled, running): (Bool, [Operation]) = lock.withLock {
            guard !isComplete, !cancelRequested else { return (false, []) }
            cancelRequested = true
            return (true, machine?.units.compactMap { $0.phase == .running ? $0.operation : nil } ?? [])
        }
        for operation in running {
            operation.cancel()
        }
        return cancelled && configuration.route != nil
    }

    // MARK: Driving

    /// Runs a `.sync` transaction to the end on the calling thread.
    func runOnCaller() {
        while drive() == .suspended {
            let (semaphore, waitUntil) = lock.withLock { () -> (DispatchSemaphore, DispatchTime?) in
                let machine = machineLocked
                if machine.callerSignal == nil { machine.callerSignal = DispatchSemaphore(value: 0) }
                return (machine.callerSignal!, machine.deadline)
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
        if let timeout = details?.timeout, machineLocked.deadline == nil {
            machineLocked.deadline = .now() + timeout.dispatchInterval
        }
        let onFastPath = unitsAreEmptyLocked
        let stopped = cancelRequested || machine?.expiredStores != nil
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
        guard let route = configuration.route else {
            complete(outcomes: [])
            return .completed
        }
        let finished = withUnsafeActionPointer(to: configuration.action) { action in
            driveFast(route: route, action: action, context: context, stoppedBeforeFirst: stoppedBeforeFirst)
        }
        return finished ? .completed : nil
    }

    /// The fast path's loop, with the action opened once for all stores.
    ///
    /// - Returns: Whether the run completed.
    private func driveFast(
        route: Route,
        action: UnsafeRawPointer,
        context: ThreadContext,
        stoppedBeforeFirst: Bool
    ) -> Bool {
        let count = route.stores.count
        let tracksDependencies = route.hasDependencies
        // Only a holder of the transaction can cancel it meanwhile: the caller of a queued dispatch,
        // or a middleware.
        let cancellable = isQueued || !middleware.isEmpty
        var operations: [Operation?] = tracksDependencies ? Array(repeating: nil, count: count) : []
        var failed: [Bool] = tracksDependencies ? Array(repeating: false, count: count) : []
        var anyFailed = false
        var outcomes: [StoreOutcome] = []
        for index in 0..<count {
            let store = route.stores[index]
            var stopped = stoppedBeforeFirst
            if !middleware.isEmpty { announce(store) }
            // A middleware's `willDispatch` may just have cancelled the transaction.
            if (index > 0 && cancellable) || !middleware.isEmpty {
                lock.lock()
                stopped = cancelRequested || machine?.expiredStores != nil
                lock.unlock()
            }
            let blocked = anyFailed && tracksDependencies && route.dependencies[index].contains { failed[$0] }
            var status = StoreOutcome.Status.cancelled
            if !stopped && !blocked {
                var suspended = false
                let start = store.beginStep(
                    action,
                    dependencies: { tracksDependencies ? route.dependencies[index].compactMap { operations[$0] } : [] },
                    context: context,
                    makeFinishHook: {
                        suspended = true
                        moveToStateMachine(running: index, outcomes: outcomes, operations: operations, failed: failed)
                        return { [self] status in unitFinished(index, status: status) }
                    }
                )
                if suspended {
                    record(start, for: index)
                    return false
                }
                status = start.status ?? .cancelled
                if tracksDependencies, let operation = start.operation { operations[index] = operation }
                if start.needsDelivery { store.deliverPendingChanges() }
            }
            if tracksDependencies && !status.isFinished {
                failed[index] = true
                anyFailed = true
            }
            if !middleware.isEmpty { reportDispatched(store) }
            if needsResult { outcomes.append(StoreOutcome(storeIdentifier: store.identifier, status: status)) }
        }
        complete(outcomes: outcomes)
        return true
    }

    /// Moves the fast path's progress into `units`: the stores before `running` are reported, the
    /// one at `running` runs.
    private func moveToStateMachine(running: Int, outcomes: [StoreOutcome], operations: [Operation?], failed: [Bool]) {
        let count = route?.stores.count ?? 0
        // A queued run now waits outside its lane: let a shutdown find it. (The run, no longer
        // reusable, keeps its identity.)
        let cancelNow = isQueued && lane?.suspendedRuns.add(self) == true
        lock.withLock {
            if cancelNow { cancelRequested = true }
            machineLocked.units = (0..<count).map { index in
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
                    (machine?.units ?? []).enumerated().map { index, unit in
                        StoreOutcome(
                            storeIdentifier: route?.stores[index].identifier ?? "",
                            status: unit.status ?? .cancelled
                        )
                    }
                }
                complete(outcomes: outcomes)
                if isQueued { lane?.suspendedRuns.remove(self) }
                return .completed
            case .suspend:
                return .suspended
            }
        }
    }

    private func nextStep() -> Step {
        lock.lock()
        defer { lock.unlock() }
        let machine = machineLocked
        var allReported = true
        for index in machine.units.indices {
            switch machine.units[index].phase {
            case .reported:
                continue
            case .finished:
                machine.units[index].phase = .reported
                let unit = machine.units[index]
                return .report(index, announced: unit.announced, needsDelivery: unit.needsDelivery)
            case .running:
                allReported = false
            case .waiting:
                allReported = false
                if cancelRequested || machine.expiredStores != nil {
                    machine.units[index].phase = .reported
                    machine.units[index].status = .cancelled
                    return .report(index, announced: false, needsDelivery: false)
                }
                var ready = true
                var dependencyFailed = false
                var operations: [Operation] = []
                for dependency in route?.dependencies[index] ?? [] {
                    guard machine.units[dependency].phase == .reported else {
                        ready = false
                        break
                    }
                    if machine.units[dependency].status?.isFinished != true { dependencyFailed = true }
                    if let operation = machine.units[dependency].operation { operations.append(operation) }
                }
                guard ready else { continue }
                if dependencyFailed {
                    machine.units[index].phase = .reported
                    machine.units[index].status = .cancelled
                    return .report(index, announced: false, needsDelivery: false)
                }
                machine.units[index].phase = .running
                machine.units[index].announced = true
                return .start(index, operations)
            }
        }
        if allReported {
            isComplete = true
            return .complete
        }
        isDriving = false
        armTimerIfNeeded(machine)
        return .suspend
    }

    private func start(_ index: Int, dependencies: [Operation], context: ThreadContext) {
        guard let store = route?.stores[index] else { return }
        if !middleware.isEmpty {
            announce(store)
            // A middleware's `willDispatch` may just have cancelled the transaction.
            if lock.withLock({ cancelRequested || machine?.expiredStores != nil }) {
                record(StepStart(operation: nil, status: .cancelled, needsDelivery: false), for: index)
                return
            }
        }
        let start = withUnsafeActionPointer(to: configuration.action) { action in
            store.beginStep(
                action,
                dependencies: { dependencies },
                context: context,
                makeFinishHook: { { [self] status in unitFinished(index, status: status) } }
            )
        }
        record(start, for: index)
    }

    /// Records how unit `index` started.
    ///
    /// A cancel or a timeout may have come while the operation started, before it was recorded here
    /// for them to find: then it is cancelled now.
    private func record(_ start: StepStart, for index: Int) {
        let cancelNow: Bool = lock.withLock {
            let machine = machineLocked
            machine.units[index].operation = start.operation
            guard let status = start.status else {
                return cancelRequested || machine.units[index].phase != .running
            }
            if machine.units[index].phase == .running {
                machine.units[index].phase = .finished
                machine.units[index].status = status
                machine.units[index].needsDelivery = start.needsDelivery
            }
            return false
        }
        if cancelNow { start.operation?.cancel() }
    }

    private func report(_ index: Int, announced: Bool, needsDelivery: Bool) {
        guard let store = route?.stores[index] else { return }
        if !announced && !middleware.isEmpty { announce(store) }
        if needsDelivery { store.deliverPendingChanges() }
        if !middleware.isEmpty { reportDispatched(store) }
    }

    /// Calls every middleware's `willDispatch` for `store`.
    private func announce(_ store: any StoreEntry) {
        let transaction = transaction
        for middleware in middleware {
            middleware.willDispatch(transaction: transaction, action: transaction.action, in: store)
        }
    }

    /// Calls every middleware's `didDispatch` for `store`.
    private func reportDispatched(_ store: any StoreEntry) {
        let transaction = transaction
        for middleware in middleware {
            middleware.didDispatch(transaction: transaction, action: transaction.action, in: store)
        }
    }

    private func complete(outcomes: [StoreOutcome]) {
        guard needsResult else { return }
        var error = details?.routingError
        if let timeout = details?.timeout, let expired = lock.withLock({ machine?.expiredStores }) {
            error = .timedOut(expired, after: timeout)
        }
        let result = DispatchResult(transaction: transaction, outcomes: outcomes, error: error)
        if let owner = configuration.owner {
            for middleware in middleware {
                middleware.didFinish(result, in: owner)
            }
        }
        configuration.completion?(result)
    }

    /// Called, once per unit, when an operation that was still running finishes (on any thread).
    private func unitFinished(_ index: Int, status: StoreOutcome.Status) {
        let (resume, late) = lock.withLock {
            let machine = machineLocked
            guard machine.units[index].phase == .running else {
                // Already given up on (timed out): only its observers remain to be told.
                return (false, true)
            }
            machine.units[index].phase = .finished
            machine.units[index].status = status
            machine.units[index].needsDelivery = true
            guard !isDriving else { return (false, false) }
            isDriving = true
            return (true, false)
        }
        if late { route?.stores[index].deliverPendingChanges() }
        if resume { resumeOnExecutor() }
    }

    /// Gives up on the operations still running: they are cancelled and reported as such.
    func expire() {
        let (running, resume) = lock.withLock {
            let machine = machineLocked
            guard !isComplete, machine.expiredStores == nil else { return ([Operation](), false) }
            var running: [Operation] = []
            var identifiers: [String] = []
            for index in machine.units.indices where machine.units[index].phase == .running {
                machine.units[index].phase = .finished
                machine.units[index].status = .cancelled
                machine.units[index].needsDelivery = true
                if let operation = machine.units[index].operation { running.append(operation) }
                identifiers.append(route?.stores[index].identifier ?? "")
            }
            machine.expiredStores = identifiers
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
        if let lane {
            lane.resume(self)
            return
        }
        let semaphore = lock.withLock {
            let machine = machineLocked
            if machine.callerSignal == nil { machine.callerSignal = DispatchSemaphore(value: 0) }
            return machine.callerSignal!
        }
        semaphore.signal()
    }

    /// Call with `lock` held, when suspending.
    private func armTimerIfNeeded(_ machine: Machine) {
        guard let deadline = machine.deadline, !machine.timerArmed, isQueued else { return }
        machine.timerArmed = true
        OperationQueues.timers.asyncAfter(deadline: deadline) { [weak self] in
            self?.expire()
        }
    }
}
