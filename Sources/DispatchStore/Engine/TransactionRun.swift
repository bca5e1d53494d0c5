import Foundation

/// A transaction while it is driven: its machine, what its result needs, and the lock that guards
/// them once other threads can reach it.
///
/// Every mode runs its transactions in runs. A lane drives the runs of the queued modes; a `.sync`
/// caller drives its run on its own thread, and waits for it while an operation finishes elsewhere
/// (`dispatch`), or lets the thread that finishes the operation drive on (`perform` from a task).
/// One thread drives a run at a time.
///
/// Runs are reused once nothing else refers to them: a lane keeps the runs it completed, and each
/// thread keeps one per level of nested `.sync` dispatches (``ThreadContext``), so that most
/// dispatches allocate nothing. The run, its lock and everything it keeps are one allocation: its
/// header is a ``Body``, its one element the mutex (S4, S5).
///
/// Not `Sendable` itself (`ManagedBuffer` is not); ``Reference`` carries it across threads.
final class TransactionRun: LockStorage<TransactionRun.Body> {
    /// What the run keeps, in its own allocation.
    ///
    /// Laid out to fit 256 bytes (a 320-byte block of glibc's `malloc` with the header and the
    /// mutex): fewer cache lines to move between the dispatching and the draining threads, fewer
    /// pages to fault in when a queue grows (S4, S5). The flags sit in the bytes after the
    /// transaction's last field, which would otherwise be padding.
    struct Body {
        /// The transaction, for those who read it through the run.
        ///
        /// They are the middleware, the result, and the transaction a queued or awaited dispatch
        /// returns. ``Transaction/idle`` while the run waits to be reused, and for a `.sync`
        /// dispatch that nobody reads (S1).
        var transaction: Transaction
        /// Whether another thread may reach the run (through its transaction, a finish hook or a
        /// timer); until then its driver reads and writes the run without the lock.
        var isShared = true
        /// Whether a lane drives the run.
        let isQueued: Bool
        /// Whether the timer that gives up at the deadline is set.
        var timerArmed = false
        /// Whether the run ever waited for an operation: a finish hook or a timer may then still
        /// refer to it, and it is not reused.
        var hasSuspended = false
        /// Whether `failures`, `sequenceNumbers` or `operations` hold something of the transaction,
        /// to clear before the next one.
        var hasRecords = false
        /// The stores the transaction reaches, `nil` when it reaches none; held until the run is
        /// reused, so that the transactions that refer to the run read it here.
        var route: Route?
        /// How the transaction is run; ``Configuration/idle`` while the run waits to be reused.
        var configuration = Configuration.idle
        /// How many steps `spilledSteps` has room for.
        var spilledCapacity: Int32 = 0
        var machine: TransactionMachine
        /// When the operations must have finished (`DispatchTime.uptimeNanoseconds`, from the first
        /// drive), 0 for no deadline: 8 bytes, where an optional `DispatchTime` takes 16 (S5).
        var deadline: UInt64 = 0
        /// The machine's steps when there are more than fit in ``inlineSteps``: reused from one
        /// transaction to the next, grown when a route is longer.
        var spilledSteps: UnsafeMutablePointer<TransactionMachine.Step>? = nil
        /// The errors of the failed steps, by step; `nil` until one fails.
        var failures: [Int: any Error]? = nil
        /// The sequence numbers the stores gave the action, by step (0 where a store did not apply
        /// it); empty until one is kept, which happens only when the result is read.
        var sequenceNumbers: [UInt64] = []
        /// Each step's operation once started, for the steps that wait for it and to cancel it;
        /// empty until a reducer returns an operation (inline reductions have none).
        var operations: [Operation?] = []
        /// What a `.sync` caller waiting for the run waits on; created when the run first suspends.
        var callerSignal: DispatchSemaphore? = nil
        /// Where the run registered when it first suspended, so that a shutdown can find it.
        var registeredIn: SuspendedRuns? = nil
        /// Room for the steps of a short route, so that most runs keep them in their own allocation.
        var inlineSteps = InlineSteps()
        /// The lane that drives the run.
        ///
        /// Unowned: the lane keeps its spare runs, and keeps itself alive while it has outstanding
        /// ones (the only ones that reach it).
        unowned let lane: Lane?
    }

    /// Room for the steps of a route of up to ``capacity`` stores.
    struct InlineSteps {
        typealias Step = TransactionMachine.Step

        /// How many steps fit.
        static let capacity = 8

        var steps = (Step(), Step(), Step(), Step(), Step(), Step(), Step(), Step())
    }

    /// How a transaction is run: who hears of it, and how it may end.
    ///
    /// Set with the transaction, immutable while the run is driven.
    struct Configuration {
        /// The middleware, `nil` when there is none.
        var middleware: [any Middleware]?
        /// The dispatcher, for the middleware's `didFinish`; `nil` when there is no middleware.
        var owner: Dispatcher?
        var completion: (@Sendable (DispatchResult) -> Void)?
        var details: Details?
        /// The action's value in the waiting `.sync` caller's frame, valid while the run is driven:
        /// the stores read it from there instead of opening the transaction's existential (S1).
        var actionPointer: UnsafeRawPointer? = nil
        // The flags, read on every step, spare the driver a retain and a release of the array or the
        // closure they describe each time (S1).
        /// Whether there is middleware.
        var hasMiddleware: Bool
        /// Whether the result is read (there is middleware or a completion): the sequence numbers
        /// the stores give the action are then kept for it.
        var readsResult: Bool
        /// Whether the transaction starts cancelled (the dispatch of an already cancelled task):
        /// every store is then skipped and reported as cancelled.
        var startsCancelled: Bool
        /// For a run without a lane: whether its `.sync` caller waits until it completes
        /// (`dispatch`), or lets it go on, on the thread that finishes its operation (`perform`).
        var blocksCaller = true

        /// What a reused run holds between two transactions: refers to nothing, so that the next
        /// configuration is written over it without destroying it first.
        static var idle: Configuration {
            Configuration(
                middleware: nil,
                owner: nil,
                completion: nil,
                details: nil,
                actionPointer: nil,
                hasMiddleware: false,
                readsResult: false,
                startsCancelled: false
            )
        }

        /// Makes the configuration ``idle``, releasing only what it holds: most hold no middleware,
        /// owner, completion or details, and their release calls would cost more than the checks (S4).
        @inline(__always)
        mutating func clear() {
            if hasMiddleware {
                middleware = nil
                owner = nil
                hasMiddleware = false
            }
            if readsResult {
                if completion != nil { completion = nil }
                readsResult = false
            }
            if details != nil { details = nil }
            startsCancelled = false
            blocksCaller = true
            actionPointer = nil
        }

        /// Whether other threads may reach the run as soon as it starts: middleware receive its
        /// transaction, and a non-blocking caller's task may cancel it.
        var isSharedFromStart: Bool {
            hasMiddleware || !blocksCaller
        }
    }

    /// What few dispatches have: a deadline, or a problem found before any store was reached.
    final class Details: Sendable {
        /// How long the operations may run once started.
        let timeout: Duration?
        /// Why no store is reached (unhandled action, unknown or mismatched `to:`, shut down).
        let routingError: DispatchError?

        init(timeout: Duration?, routingError: DispatchError?) {
            self.timeout = timeout
            self.routingError = routingError
        }
    }

    /// How far driving a run got.
    enum DriveResult {
        /// The run is done.
        case completed
        /// The run waits for an operation; whoever finishes it hands the run back to be driven again.
        case suspended
    }

    /// How a store's step started: what `StoreEntry.beginStep` returns.
    ///
    /// Plain fields rather than a `StoreOutcome.Status`, whose payload would be copied and destroyed
    /// on every inline step (S1).
    struct StepStart {
        /// The operation the reducer returned (`nil` for an inline reduction).
        let operation: Operation?
        /// How the step ended when it finished before starting returned; `nil` while its operation
        /// runs (the finish hook will be called exactly once).
        let ending: TransactionMachine.Ending?
        /// The error of a failed step (the machine records only that it failed; the run keeps it).
        let error: (any Error)?
        /// Whether a change may be queued for the store's observers.
        let needsDelivery: Bool

        /// A step that finished at once.
        static func finished(needsDelivery: Bool) -> StepStart {
            StepStart(operation: nil, ending: .finished, error: nil, needsDelivery: needsDelivery)
        }

        /// A step that failed at once, without an operation of its own.
        static func failed(_ error: any Error, needsDelivery: Bool) -> StepStart {
            StepStart(operation: nil, ending: .failed, error: error, needsDelivery: needsDelivery)
        }

        /// A step whose operation finished before starting it returned.
        static func ended(_ operation: Operation, _ status: StoreOutcome.Status, needsDelivery: Bool) -> StepStart {
            switch status {
            case .finished:
                StepStart(operation: operation, ending: .finished, error: nil, needsDelivery: needsDelivery)
            case .cancelled:
                StepStart(operation: operation, ending: .cancelled, error: nil, needsDelivery: needsDelivery)
            case .failed(let error):
                StepStart(operation: operation, ending: .failed, error: error, needsDelivery: needsDelivery)
            }
        }

        /// A step whose operation runs on: the finish hook will tell how it ends.
        static func running(_ operation: Operation) -> StepStart {
            StepStart(operation: operation, ending: nil, error: nil, needsDelivery: true)
        }
    }

    /// Where the transaction, the configuration, the machine and the inline steps sit in the body.
    ///
    /// Computed where used, which folds to a constant; stored constants would be lazy globals,
    /// checked on every use (S4, S5).
    private static var transactionOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.transaction).unsafelyUnwrapped }
    }
    static var routeOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.route).unsafelyUnwrapped }
    }
    private static var configurationOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.configuration).unsafelyUnwrapped }
    }
    private static var machineOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.machine).unsafelyUnwrapped }
    }
    private static var inlineStepsOffset: Int {
        @inline(__always) get { MemoryLayout<Body>.offset(of: \.inlineSteps).unsafelyUnwrapped }
    }

    /// A run waiting for its first transaction (see ``configure(transaction:route:configuration:)``).
    ///
    /// - Parameter lane: The lane that will drive it, or `nil` for a run its `.sync` caller drives.
    /// - Returns: The run, idle.
    static func make(lane: Lane?) -> TransactionRun {
        create(kind: .normal) {
            Body(
                transaction: .idle,
                isQueued: lane != nil,
                route: nil,
                machine: TransactionMachine(steps: TransactionMachine.noSteps, count: 0, reportsNeedWork: false),
                lane: lane
            )
        }
    }

    deinit {
        body.pointee.spilledSteps?.deallocate()
    }

    /// What the run keeps; stable for the run's lifetime.
    var body: UnsafeMutablePointer<Body> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    /// The transaction's machine; touch it from the driver, or under the lock once the run is shared.
    var machine: UnsafeMutablePointer<TransactionMachine> {
        (UnsafeMutableRawPointer(body) + Self.machineOffset).assumingMemoryBound(to: TransactionMachine.self)
    }

    /// Storage for `count` steps: the run's own for a few, a reused buffer beyond.
    @inline(__always)
    private func stepStorage(for count: Int) -> UnsafeMutablePointer<TransactionMachine.Step> {
        if count <= InlineSteps.capacity {
            // The tuple's elements are `Step`s, so its memory is bound to `Step`.
            return (UnsafeMutableRawPointer(body) + Self.inlineStepsOffset)
                .assumingMemoryBound(to: TransactionMachine.Step.self)
        }
        return spilledSteps(for: count)
    }

    /// Storage for more steps than fit in the run: kept from one transaction to the next, grown
    /// when a route is longer.
    @inline(never)
    private func spilledSteps(for count: Int) -> UnsafeMutablePointer<TransactionMachine.Step> {
        if let spilled = body.pointee.spilledSteps, count <= body.pointee.spilledCapacity { return spilled }
        body.pointee.spilledSteps?.deallocate()
        let capacity = max(count, Int(body.pointee.spilledCapacity) * 2)
        let created = UnsafeMutablePointer<TransactionMachine.Step>.allocate(capacity: capacity)
        created.initialize(repeating: TransactionMachine.Step(), count: capacity)
        body.pointee.spilledSteps = created
        body.pointee.spilledCapacity = Int32(capacity)
        return created
    }

    /// Sets the transaction the run executes and starts it over; the caller owns the run
    /// exclusively, and the run is idle (new, or cleared for reuse).
    ///
    /// What an idle run holds owns nothing (no reference, no boxed value), so it is overwritten in
    /// place rather than destroyed first, which saves two outlined destroys per dispatch (S4, S5).
    @inline(__always)
    func configure(
        transaction: consuming Transaction,
        route: consuming Route?,
        configuration: consuming Configuration
    ) {
        setTransaction(transaction)
        configure(route: route, configuration: configuration)
    }

    /// Starts the run over for a transaction that nobody reads through the run (a `.sync` dispatch
    /// with no middleware and no completion): it keeps ``Transaction/idle`` (S1).
    ///
    /// - Parameters:
    ///   - route: The stores the transaction reaches.
    ///   - configuration: How it is run.
    @inline(__always)
    func configure(route: consuming Route?, configuration: consuming Configuration) {
        let body = body
        assert(
            body.pointee.route == nil && body.pointee.configuration.middleware == nil
                && body.pointee.configuration.completion == nil && body.pointee.configuration.details == nil
                && body.pointee.configuration.owner == nil,
            "DispatchStore: a run was configured while it held a transaction"
        )
        let count = route?.count ?? 0
        let fields = UnsafeMutableRawPointer(body)
        (fields + Self.routeOffset).assumingMemoryBound(to: Route?.self).initialize(to: consume route)
        let settings = (fields + Self.configurationOffset).assumingMemoryBound(to: Configuration.self)
        settings.initialize(to: consume configuration)
        body.pointee.isShared =
            body.pointee.isQueued || settings.pointee.hasMiddleware || !settings.pointee.blocksCaller
        body.pointee.machine = TransactionMachine(
            steps: stepStorage(for: count),
            count: count,
            reportsNeedWork: settings.pointee.hasMiddleware,
            cancelled: settings.pointee.startsCancelled
        )
        if body.pointee.hasRecords {
            body.pointee.hasRecords = false
            body.pointee.failures = nil
            if !body.pointee.sequenceNumbers.isEmpty { body.pointee.sequenceNumbers.removeAll(keepingCapacity: true) }
            if !body.pointee.operations.isEmpty { body.pointee.operations.removeAll(keepingCapacity: true) }
        }
        body.pointee.deadline = 0
        body.pointee.timerArmed = false
    }

    /// Sets the transaction that those who read it through the run see: the middleware, the result,
    /// the transaction a queued dispatch returns; the run holds ``Transaction/idle``.
    @inline(__always)
    func setTransaction(_ transaction: consuming Transaction) {
        assert(body.pointee.transaction.id == 0, "DispatchStore: a run was given a second transaction")
        (UnsafeMutableRawPointer(body) + Self.transactionOffset).assumingMemoryBound(to: Transaction.self)
            .initialize(to: consume transaction)
    }

    /// Makes a completed run idle, ready for reuse, if it can be: no finish hook or timer can refer
    /// to it.
    ///
    /// Ask from the thread that drove it, once nothing else refers to it. One critical section: the
    /// last holder of the transaction may have called `cancel()` before releasing its reference, and
    /// taking the lock orders that before the reuse.
    ///
    /// - Returns: `nil` when the run cannot be reused; otherwise the route it held, moved rather than
    ///   released here (a `.sync` dispatch hands it to the transaction it returns, S1).
    @inline(__always)
    func clearForReuse() -> Route?? {
        let locked = lockMachine()
        defer { unlockMachine(locked) }
        guard !body.pointee.hasSuspended else { return nil }
        body.pointee.configuration.clear()
        // An idle transaction (id 0) holds nothing to release.
        if body.pointee.transaction.id != 0 { body.pointee.transaction = .idle }
        return .some(body.pointee.route.take())
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

    /// The stores the transaction reaches, or `nil` when it reaches none.
    var route: Route? {
        body.pointee.route
    }

    /// The transaction's action, boxed as the run keeps it.
    var action: any ActionType {
        body.pointee.transaction.action
    }

    /// Calls `perform` with a pointer to the action, valid during the call.
    func withAction<Result>(_ perform: (UnsafeRawPointer) -> Result) -> Result {
        if let pointer = body.pointee.configuration.actionPointer { return perform(pointer) }
        return withUnsafeActionPointer(to: body.pointee.transaction.action, perform)
    }

    // MARK: The lock

    /// Takes the run's lock if other threads can reach it.
    ///
    /// - Returns: Whether it did; pass it to ``unlockMachine(_:)``.
    @inline(__always)
    func lockMachine() -> Bool {
        let shared = body.pointee.isShared
        if shared { lock() }
        return shared
    }

    /// Releases what ``lockMachine()`` took.
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
        if alone && locked && !body.pointee.hasSuspended && !body.pointee.configuration.isSharedFromStart {
            body.pointee.isShared = false
        }
        return locked
    }

    // MARK: What the result needs

    /// Whether the transaction's result will be read (it has a completion or middleware): the
    /// sequence numbers the stores give the action are then kept for it.
    var keepsSequenceNumbers: Bool {
        body.pointee.configuration.readsResult
    }

    /// Keeps the error and the sequence number of step `index`; call with the machine locked.
    @inline(__always)
    func record(error: (any Error)?, sequenceNumber: UInt64, of index: Int) {
        let keepsNumber = sequenceNumber != 0 && keepsSequenceNumbers
        guard error != nil || keepsNumber else { return }
        body.pointee.hasRecords = true
        if let error {
            if body.pointee.failures == nil { body.pointee.failures = [:] }
            body.pointee.failures?[index] = error
        }
        if keepsNumber {
            if body.pointee.sequenceNumbers.isEmpty {
                body.pointee.sequenceNumbers = Array(repeating: 0, count: machine.pointee.count)
            }
            body.pointee.sequenceNumbers[index] = sequenceNumber
        }
    }

    /// The sequence number step `index` got from its store, or `nil` when it did not apply the
    /// action; call with the machine locked.
    func sequenceNumber(of index: Int) -> UInt64? {
        let numbers = body.pointee.sequenceNumbers
        guard index < numbers.count, numbers[index] != 0 else { return nil }
        return numbers[index]
    }

    /// The operations of the steps at `indices` that have one; call with the machine locked.
    func operations(at indices: [Int]) -> [Operation] {
        let operations = body.pointee.operations
        return operations.isEmpty ? [] : indices.compactMap { operations[$0] }
    }
}
