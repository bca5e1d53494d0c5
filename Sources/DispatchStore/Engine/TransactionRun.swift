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
        /// How it is run; ``RunConfiguration/idle`` while the run waits to be reused.
        var configuration: RunConfiguration
        var state: RunState
        /// Room for the steps of a short route, so that most runs keep them in their own allocation.
        var inlineSteps: (UInt64) = 0
        /// Whether another thread may reach the run (through its transaction, a finish hook or a timer).
        ///
        /// Until then its driver reads and writes `state` without the lock.
        var isShared: Bool
        /// The lane that drives the run.
        ///
        /// Unowned: the lane keeps its spare runs, and keeps itself alive while it has outstanding ones (the only ones
        /// that reach it).
        unowned let lane: Lane?
        /// Whether a lane drives the run.
        let isQueued: Bool
    }

    /// Where the state, its machine and the inline steps sit in the body.
    ///
    /// Computed where used, which folds to a constant; stored constants would be lazy globals, checked
    /// on every use (S4, S5).
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
                configuration: .idle,
                state: RunState(inlineSteps: nil),
                isShared: true,
                lane: lane,
                isQueued: lane != nil
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
                configuration: configuration,
                state: RunState(inlineSteps: nil),
                isShared: true,
                lane: nil,
                isQueued: false
            )
        }
        run.run.pointee.adopt(machine, records: records, inline: run.inlineSteps)
        run.run.pointee.deadline = deadline
        return run
    }

    deinit {
        run.pointee.release()
    }

    /// What the run keeps; stable for the run's lifetime.
    private var body: UnsafeMutablePointer<Body> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    /// The run's state; touch it under the lock once the run is shared.
    private var run: UnsafeMutablePointer<RunState> {
        (UnsafeMutableRawPointer(body) + Self.stateOffset).assumingMemoryBound(to: RunState.self)
    }

    /// The room for a short route's steps, in the body.
    private var inlineSteps: UnsafeMutablePointer<TransactionMachine.Step> {
        (UnsafeMutableRawPointer(body) + Self.inlineStepsOffset).assumingMemoryBound(to: TransactionMachine.Step.self)
    }

    /// Sets what a reused run executes and starts it over; the caller owns the run exclusively.
    func configure(transaction: consuming Transaction, configuration: consuming RunConfiguration) {
        let body = body
        body.pointee.isShared = body.pointee.isQueued || configuration.isSharedFromStart
        body.pointee.state.reset(route: transaction.route, configuration: configuration, inline: inlineSteps)
        body.pointee.transaction = consume transaction
        body.pointee.configuration = consume configuration
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
        guard !run.pointee.hasSuspended else { return false }
        body.pointee.transaction = .idle
        body.pointee.configuration = .idle
        return true
    }

    /// The transaction, as handed out to the caller of a queued dispatch and to the middleware: able
    /// to cancel the run.
    func cancellableTransaction() -> Transaction {
        var handed = resultTransaction
        handed.run = Reference(run: self)
        return handed
    }

    // MARK: Driving

    /// Drives the run until it completes or waits for an operation.
    ///
    /// - Parameters:
    ///   - suspendedRuns: Where to register if the run waits for the first time, so that a shutdown
    ///     finds it.
    ///   - context: The calling thread's context.
    /// - Returns: Whether the run completed or waits for an operation.
    func drive(suspendedRuns: SuspendedRuns?, context: ThreadContext = .current) -> DriveResult {
        if let timeout = body.pointee.configuration.details?.timeout {
            // The deadline counts from the first drive.
            let locked = lockMachine()
            if run.pointee.deadline == nil { run.pointee.deadline = .now() + timeout.dispatchInterval }
            unlockMachine(locked)
        }
        var host = self
        // The transaction holds the route until the run is reused, which only its driver does.
        guard let route = body.pointee.transaction.route.map(Unmanaged.passUnretained) else {
            return RunDriver.drive(&host, route: nil, suspendedRuns: suspendedRuns, context: context)
        }
        return route._withUnsafeGuaranteedRef { route in
            RunDriver.drive(&host, route: route, suspendedRuns: suspendedRuns, context: context)
        }
    }

    /// Drives a `.sync` transaction to the end on the calling thread, waiting for its operations.
    func runOnCaller(suspendedRuns: SuspendedRuns?, context: ThreadContext) {
        while drive(suspendedRuns: suspendedRuns, context: context) == .suspended {
            // Created, under the lock, when the run suspended, so that a resumption signals it.
            lock()
            let signal = run.pointee.callerSignal
            unlock()
            signal?.wait()
        }
    }

    /// Takes over from an ``InlineRun`` right after step `index` started, and drives the rest on
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
        record(begun, of: index, context: context)
        let stopped = machine.pointee.started(index, ending: begun.ending, needsDelivery: begun.needsDelivery)
        unlock()
        if stopped { begun.operation?.cancel() }
        runOnCaller(suspendedRuns: suspendedRuns, context: context)
        return .completed
    }

    // MARK: RunHost

    var machine: UnsafeMutablePointer<TransactionMachine> {
        (UnsafeMutableRawPointer(body) + Self.machineOffset).assumingMemoryBound(to: TransactionMachine.self)
    }

    /// The stores the transaction reaches, or `nil` when it reaches none.
    private var route: Route? {
        body.pointee.transaction.route
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

    var keepsSequenceNumbers: Bool {
        body.pointee.configuration.completion != nil || hasMiddleware
    }

    func withRecords<Result>(_ body: (inout StepRecords) -> Result) -> Result {
        body(&run.pointee.records)
    }

    func dependencies(of index: Int, in route: Route) -> [Operation] {
        run.pointee.operations(at: route.dependencies[index])
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
        run.pointee.record(operation, at: index, of: machine.pointee.count)
        unlockMachine(locked)
        return nil
    }

    func prepareToWait(suspendedRuns: SuspendedRuns?) -> SuspendedRuns.Policy {
        precondition(body.pointee.isShared, "DispatchStore: a run waits for an operation nobody can finish")
        var policy = SuspendedRuns.Policy.none
        let state = run
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
        let registeredIn = run.pointee.registeredIn
        run.pointee.registeredIn = nil
        unlockMachine(locked)
        registeredIn?.remove(self)
    }

    // MARK: Events from other threads

    /// Called, once per step, when an operation that was still running finishes (on any thread).
    fileprivate func stepFinished(_ index: Int, status: StoreOutcome.Status, sequenceNumber: UInt64) {
        lock()
        let ending: TransactionMachine.Ending
        var failure: (any Error)?
        switch status {
        case .finished: ending = .finished
        case .cancelled: ending = .cancelled
        case .failed(let error):
            ending = .failed
            failure = error
        }
        if machine.pointee.steps[index].phase == .running {
            record(error: failure, sequenceNumber: sequenceNumber, of: index)
        }
        let resumption = machine.pointee.finished(index, ending: ending)
        unlock()
        switch resumption {
        case .none: break
        case .resume: resume()
        case .late: route?.stores[index].deliverPendingChanges()
        }
    }

    /// Cancels the transaction's operations that have not finished yet.
    ///
    /// - Returns: Whether this call cancelled the transaction: `false` when it had completed or was
    ///   cancelled already, or reaches no store.
    @discardableResult
    func requestCancel() -> Bool {
        lock()
        let steps = machine.pointee.cancel()
        let running = steps.map { run.pointee.operations(at: $0) } ?? []
        unlock()
        for operation in running {
            operation.cancel()
        }
        return steps != nil && route != nil
    }

    /// Gives up on the operations still running: they are cancelled and reported as such, and the
    /// completion runs without waiting for them.
    ///
    /// - Returns: Whether this call gave up on the transaction (`false` when it had completed).
    @discardableResult
    func giveUp(_ reason: TransactionMachine.GiveUpReason) -> Bool {
        lock()
        let given = machine.pointee.giveUp(reason)
        let running = given.map { given in
            given.steps.compactMap { index in run.pointee.operations(at: [index]).first.map { (index, $0) } }
        }
        unlock()
        for (index, operation) in running ?? [] {
            route?.stores[index].abandon(operation)
            operation.cancel()
        }
        if given?.resume == true { resume() }
        return given != nil
    }

    /// Hands the run back to whoever drives it.
    private func resume() {
        if body.pointee.isQueued, let lane = body.pointee.lane {
            lane.resume(self)
        } else if body.pointee.configuration.blocksCaller {
            lock()
            let signal = run.pointee.callerSignal
            unlock()
            signal?.signal()
        } else {
            // Nobody waits for the run: go on on this thread (it is registered already).
            _ = drive(suspendedRuns: nil)
        }
    }
}
