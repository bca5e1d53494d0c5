import Foundation

/// A transaction on the heap, driven by ``RunDriver``: by its lane for the queued modes, by its
/// `.sync` caller (blocked on it, or not at all for a `perform` from a task), and handed back to
/// whoever drives it when the operation it waits for finishes on another thread.
///
/// One thread drives a run at a time. Lanes reuse their runs once nothing else refers to them. The
/// run, its lock and everything it keeps are one allocation: its header is a ``Body``, its one
/// element the mutex (S4, S5).
///
/// Not `Sendable` itself (`ManagedBuffer` is not); ``Reference`` carries it across threads.
final class TransactionRun: LockStorage<TransactionRun.Body>, RunHost {
    /// What the run keeps, in the run's own allocation.
    struct Body {
        /// The transaction; ``Transaction/idle`` while the run waits to be reused.
        var transaction: Transaction
        // The two flags sit in the bytes after the transaction's last field, which would otherwise
        // be padding: a smaller run is fewer cache lines to move between the dispatching thread and
        // the drainer (S5).
        /// Whether another thread may reach the run (through its transaction, a finish hook or a timer).
        ///
        /// Until then its driver reads and writes `state` without the lock.
        var isShared: Bool
        /// Whether a lane drives the run.
        let isQueued: Bool
        /// How it is run; ``RunConfiguration/idle`` while the run waits to be reused.
        var configuration: RunConfiguration
        var state: RunState
        /// Room for the steps of a short route, so that most runs keep them in their own allocation.
        var inlineSteps: (UInt64) = 0
        /// The lane that drives the run.
        ///
        /// Unowned: the lane keeps its spare runs, and keeps itself alive while it has outstanding ones (the only ones
        /// that reach it).
        unowned let lane: Lane?
    }

    /// Where the transaction, the configuration, the state, its machine and the inline steps sit in
    /// the body.
    ///
    /// Computed where used, which folds to a constant; stored constants would be lazy globals, checked
    /// on every use (S4, S5).
    private static var transactionOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.transaction).unsafelyUnwrapped }
    }
    private static var configurationOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.configuration).unsafelyUnwrapped }
    }
    private static var stateOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.state).unsafelyUnwrapped }
    }
    private static var machineOffset: Int {
        @inline(__always) get { stateOffset + MemoryLayout<RunState>.offset(of: \.machine).unsafelyUnwrapped }
    }
    private static var inlineStepsOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.inlineSteps).unsafelyUnwrapped }
    }

    /// A run for a transaction starting now.
    static func make(
        lane: Lane?,
        transaction: consuming Transaction,
        configuration: consuming RunConfiguration
    ) -> TransactionRun {
        let run = create(kind: .normal) {
            Body(
                transaction: .idle,
                isShared: true,
                isQueued: lane != nil,
                configuration: .idle,
                state: RunState(inlineSteps: nil),
                lane: lane
            )
        }
        run.configure(transaction: consume transaction, configuration: consume configuration)
        return run
    }

    /// A run taking over a `.sync` transaction driven so far on its caller's stack: a step's
    /// operation may now finish on another thread.
    static func takingOver(
        _ transaction: Transaction,
        configuration: RunConfiguration,
        machine: TransactionMachine,
        records: StepRecords,
        deadline: DispatchTime?
    ) -> TransactionRun {
        let run = create(kind: .normal) {
            Body(
                transaction: transaction,
                isShared: true,
                isQueued: false,
                configuration: configuration,
                state: RunState(inlineSteps: nil),
                lane: nil
            )
        }
        run.runState.pointee.adopt(machine, records: records, inline: run.inlineSteps)
        run.runState.pointee.deadline = deadline
        return run
    }

    deinit {
        runState.pointee.release()
    }

    /// What the run keeps; stable for the run's lifetime.
    var body: UnsafeMutablePointer<Body> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    /// The run's state; touch it from the driver, or under the lock once the run is shared.
    var runState: UnsafeMutablePointer<RunState> {
        (UnsafeMutableRawPointer(body) + Self.stateOffset).assumingMemoryBound(to: RunState.self)
    }

    /// The room for a short route's steps, in the body.
    private var inlineSteps: UnsafeMutablePointer<TransactionMachine.Step> {
        (UnsafeMutableRawPointer(body) + Self.inlineStepsOffset).assumingMemoryBound(to: TransactionMachine.Step.self)
    }

    /// Sets what a new or reused run executes and starts it over; the caller owns the run
    /// exclusively, and the run holds ``Transaction/idle`` and ``RunConfiguration/idle``.
    ///
    /// Those own nothing (no reference, no boxed value), so they are overwritten in place rather
    /// than destroyed first, which saves two outlined destroys per queued dispatch (S4, S5).
    func configure(transaction: consuming Transaction, configuration: consuming RunConfiguration) {
        let body = body
        assert(
            body.pointee.transaction.id == 0 && body.pointee.transaction.route == nil
                && body.pointee.transaction.run == nil && body.pointee.transaction.targetIdentifier == nil
                && body.pointee.configuration.middleware.capacity == 0
                && body.pointee.configuration.completion == nil && body.pointee.configuration.details == nil
                && body.pointee.configuration.owner == nil,
            "DispatchStore: a run was configured while it held a transaction"
        )
        body.pointee.isShared = body.pointee.isQueued || configuration.isSharedFromStart
        body.pointee.state.reset(route: transaction.route, configuration: configuration, inline: inlineSteps)
        let fields = UnsafeMutableRawPointer(body)
        (fields + Self.transactionOffset).assumingMemoryBound(to: Transaction.self).initialize(to: consume transaction)
        (fields + Self.configurationOffset).assumingMemoryBound(to: RunConfiguration.self)
            .initialize(to: consume configuration)
    }

    /// Makes a completed run ready for reuse, if it can be.
    ///
    /// It can when no finish hook or timer can refer to it; it then releases the transaction, before
    /// the run waits to be reused.
    ///
    /// Ask from the thread that drove it, once nothing else refers to it. One critical section: the
    /// last holder of the transaction may have called `cancel()` before releasing its reference, and
    /// taking the lock orders that before the reuse.
    ///
    /// - Returns: Whether the run can be reused.
    func clearForReuse() -> Bool {
        let locked = lockMachine()
        defer { unlockMachine(locked) }
        guard !runState.pointee.hasSuspended else { return false }
        body.pointee.transaction = .idle
        body.pointee.configuration.clear()
        return true
    }

    /// The transaction, as handed out to the caller of a queued dispatch and to the middleware: able
    /// to cancel the run.
    ///
    /// It reads its route from the run, which is not reused while a transaction refers to it: the
    /// route is shared by every dispatch of its action type, and a reference of its own would be a
    /// retain and a release on that shared count for every queued dispatch (S5).
    func cancellableTransaction() -> Transaction {
        Transaction(
            id: body.pointee.transaction.id,
            action: body.pointee.transaction.action,
            mode: body.pointee.transaction.mode,
            targetIdentifier: body.pointee.transaction.targetIdentifier,
            links: Transaction.Links(run: Reference(run: self))
        )
    }

    // MARK: Driving

    /// Drives the run until it completes or waits for an operation.
    ///
    /// - Parameters:
    ///   - suspendedRuns: Where to register if the run waits for the first time, so that a shutdown
    ///     finds it.
    ///   - context: The calling thread's context.
    ///   - alone: Whether the caller (a lane's drainer) holds the only reference to the run; see
    ///     ``lockMachine(startingAlone:)``.
    /// - Returns: Whether the run completed or waits for an operation.
    func drive(suspendedRuns: SuspendedRuns?, context: ThreadContext = .current, alone: Bool = false) -> DriveResult {
        if let timeout = body.pointee.configuration.details?.timeout {
            // The deadline counts from the first drive.
            let locked = lockMachine()
            if runState.pointee.deadline == nil { runState.pointee.deadline = .now() + timeout.dispatchInterval }
            unlockMachine(locked)
        }
        // The transaction holds the route until the run is reused, which only its driver does.
        guard let route = body.pointee.transaction.route.map(Unmanaged.passUnretained) else {
            return RunDriver.drive(self, route: nil, suspendedRuns: suspendedRuns, context: context, alone: alone)
        }
        return route._withUnsafeGuaranteedRef { route in
            RunDriver.drive(self, route: route, suspendedRuns: suspendedRuns, context: context, alone: alone)
        }
    }

    /// Drives a `.sync` transaction to the end on the calling thread, waiting for its operations.
    func runOnCaller(suspendedRuns: SuspendedRuns?, context: ThreadContext) {
        while drive(suspendedRuns: suspendedRuns, context: context) == .suspended {
            // Created, under the lock, when the run suspended, so that a resumption signals it.
            lock()
            let signal = runState.pointee.callerSignal
            unlock()
            signal?.wait()
        }
    }

    /// Takes over from an ``InlineHost`` right after step `index` started, and drives the rest on
    /// the calling thread.
    func finishOnCaller(
        afterStarting index: Int,
        _ begun: StepStart,
        suspendedRuns: SuspendedRuns?,
        context: ThreadContext
    )
        -> DriveResult
    {
        _ = didStart(index, begun, context: context)
        lock()
        let cancelling = recordStarted(index, begun, context: context)
        unlock()
        cancelling?.cancel()
        runOnCaller(suspendedRuns: suspendedRuns, context: context)
        return .completed
    }

    // MARK: RunHost

    var machine: UnsafeMutablePointer<TransactionMachine> {
        (UnsafeMutableRawPointer(body) + Self.machineOffset).assumingMemoryBound(to: TransactionMachine.self)
    }

    /// The stores the transaction reaches, or `nil` when it reaches none.
    var route: Route? {
        body.pointee.transaction.route
    }

    /// The transaction's action, boxed as the run keeps it.
    var action: any ActionType {
        body.pointee.transaction.action
    }

    var resultTransaction: Transaction {
        body.pointee.transaction
    }

    var hasMiddleware: Bool {
        !body.pointee.configuration.middleware.isEmpty
    }

    var middleware: [any Middleware] {
        body.pointee.configuration.middleware
    }

    var owner: Dispatcher? {
        body.pointee.configuration.owner
    }

    var completion: (@Sendable (DispatchResult) -> Void)? {
        body.pointee.configuration.completion
    }

    var details: RunConfiguration.Details? {
        body.pointee.configuration.details
    }

    func withAction<Result>(_ perform: (UnsafeRawPointer) -> Result) -> Result {
        if let pointer = body.pointee.configuration.actionPointer { return perform(pointer) }
        return withUnsafeActionPointer(to: body.pointee.transaction.action, perform)
    }

    @inline(__always)
    func lockMachine() -> Bool {
        let shared = body.pointee.isShared
        if shared { lock() }
        return shared
    }

    @inline(__always)
    func unlockMachine(_ locked: Bool) {
        if locked { unlock() }
    }

    /// Locks the run for the drive's first step; with `alone`, the run is no longer shared.
    ///
    /// Nobody else can then reach it: the caller dropped the transaction the dispatch returned.
    /// While it is driven, new references come only from the driver: a finish hook
    /// (``finishHook(for:)`` marks the run shared before making it) and a suspension (which only a
    /// step with a finish hook leads to). The middleware's transactions are the other kind, and a
    /// run with middleware is shared from the start, so it is never driven alone. Taking the lock
    /// this once orders a `cancel()` made before the last other reference went away before the
    /// drive (S4). A run that ever waited stays shared: a timer may still hold a weak reference to
    /// it.
    @inline(__always)
    func lockMachine(startingAlone alone: Bool) -> Bool {
        let locked = lockMachine()
        if alone && locked && !runState.pointee.hasSuspended && !body.pointee.configuration.isSharedFromStart {
            body.pointee.isShared = false
        }
        return locked
    }

    var keepsSequenceNumbers: Bool {
        body.pointee.configuration.completion != nil || hasMiddleware
    }

    func withRecords<Result>(_ body: (inout StepRecords) -> Result) -> Result {
        body(&runState.pointee.records)
    }

    func dependencies(of index: Int, in route: Route) -> [Operation] {
        runState.pointee.operations(at: route.dependencies[index])
    }

    func finishHook(for index: Int) -> StepFinishHook {
        // The operation may finish on another thread from now on.
        body.pointee.isShared = true
        let reference = Reference(run: self)
        return { status, sequenceNumber in
            reference.run.stepFinished(index, status: status, sequenceNumber: sequenceNumber)
        }
    }

    func didStart(_ index: Int, _ begun: StepStart, context: ThreadContext) -> DriveResult? {
        guard let operation = begun.operation else { return nil }
        let locked = lockMachine()
        runState.pointee.record(operation, at: index, of: machine.pointee.count)
        unlockMachine(locked)
        return nil
    }

    func prepareToWait(suspendedRuns: SuspendedRuns?) -> SuspendedRuns.Policy {
        precondition(body.pointee.isShared, "DispatchStore: a run waits for an operation nobody can finish")
        var policy = SuspendedRuns.Policy.none
        let state = runState
        if !state.pointee.hasSuspended {
            state.pointee.hasSuspended = true
            if body.pointee.configuration.blocksCaller && !body.pointee.isQueued {
                state.pointee.callerSignal = DispatchSemaphore(value: 0)
            }
            if let suspendedRuns {
                state.pointee.registeredIn = suspendedRuns
                policy = suspendedRuns.add(self)
            }
        }
        if let deadline = state.pointee.deadline, !state.pointee.timerArmed {
            state.pointee.timerArmed = true
            let reference = WeakReference(run: self)
            OperationQueues.timers.asyncAfter(deadline: deadline) {
                _ = reference.run?.giveUp(.timeout)
            }
        }
        return policy
    }

    func apply(_ policy: SuspendedRuns.Policy) {
        switch policy {
        case .none: break
        case .cancel: requestCancel()
        case .giveUp: giveUp(.shutdown)
        }
    }

    func didComplete() {
        let locked = lockMachine()
        let registeredIn = runState.pointee.registeredIn
        runState.pointee.registeredIn = nil
        unlockMachine(locked)
        registeredIn?.remove(self)
    }
}
