import Foundation

/// A transaction while it is driven, in every mode: its machine, what its result needs, and the
/// lock that guards them once other threads can reach it.
///
/// One thread drives a run at a time: a lane's drainer, or a `.sync` caller. Runs are reused once
/// nothing else refers to them (lanes keep spares, threads one per `.sync` nesting level). A run and
/// its lock are one allocation: the header is the ``Body``, the element the mutex (S4, S5).
final class TransactionRun: LockStorage<TransactionRun.Body> {
    /// What the run keeps, in 256 bytes (a 320-byte `malloc` block with header and mutex: fewer cache
    /// lines to move between threads, S4, S5); the flags fill the padding after the transaction.
    struct Body {
        /// The transaction, for whoever reads it through the run; ``Transaction/idle`` if nobody does (S1).
        var transaction: Transaction
        /// Whether another thread may reach the run; until then its driver skips the lock.
        var isShared = true
        /// Whether a lane drives the run.
        let isQueued: Bool
        /// Whether the timer that abandons the running steps at the deadline is set.
        var timerArmed = false
        /// Whether the run ever suspended for an operation: a timer may still refer to it; not reused.
        var hasSuspended = false
        /// Whether `failures`, `sequenceNumbers` or `operations` need clearing for the next transaction.
        var hasRecords = false
        /// The stores the transaction reaches; transactions that refer to the run read it here.
        var route: Route?
        /// How the transaction is run; empty, referring to nothing, while the run waits to be reused.
        var configuration = Configuration()
        /// How many steps `spilledSteps` has room for.
        var spilledCapacity: Int32 = 0
        var machine = TransactionMachine(steps: TransactionMachine.noSteps, count: 0, reportsNeedWork: false)
        /// The deadline's `DispatchTime.uptimeNanoseconds`, 0 for none (8 bytes, not 16, S5).
        var deadline: UInt64 = 0
        /// The steps of a route too long for ``inlineSteps``, kept for the next transaction.
        var spilledSteps: UnsafeMutablePointer<TransactionMachine.Step>? = nil
        /// The errors of the failed steps, by step; `nil` until one fails.
        var failures: [Int: any Error]? = nil
        /// The sequence numbers the stores gave the action, by step (0: not applied), for a result.
        var sequenceNumbers: [UInt64] = []
        /// Each step's operation (for its waiters and to cancel it); empty until a reducer returns one.
        var operations: [Operation?] = []
        /// What a waiting `.sync` caller waits on; created when the run first suspends.
        var callerSignal: DispatchSemaphore? = nil
        /// Where the run registered when it first suspended, so that a shutdown can find it.
        var registeredIn: SuspendedRuns? = nil
        /// The steps of a short route, in the run's own allocation.
        var inlineSteps = InlineSteps()
        /// The lane that drives the run (a lane keeps itself alive while it has runs out).
        unowned let lane: Lane?
    }

    /// Room for the steps of a route of up to ``capacity`` stores.
    struct InlineSteps {
        typealias Step = TransactionMachine.Step
        static let capacity = 8
        var steps = (Step(), Step(), Step(), Step(), Step(), Step(), Step(), Step())
    }

    /// How a transaction is run: who hears of it, and how it may end; fixed while it is driven.
    struct Configuration {
        /// The middleware, `nil` when there is none.
        var middleware: [any Middleware]? = nil
        /// The dispatcher, for the middleware's `didFinish`; `nil` when there is no middleware.
        var owner: Dispatcher? = nil
        var completion: (@Sendable (DispatchResult) -> Void)? = nil
        var details: Details? = nil
        /// The action in the waiting `.sync` caller's frame: the stores read it there (S1).
        var actionPointer: UnsafeRawPointer? = nil
        /// Whether there is middleware: a flag, so that checks retain and release no array (S1).
        var hasMiddleware = false
        /// Whether someone reads the result (middleware or a completion).
        var readsResult = false
        /// Whether the transaction starts cancelled (a task cancelled already): every store skipped.
        var startsCancelled = false
        /// Whether a `.sync` caller waits (`dispatch`), or whoever finishes an operation drives on (`perform`).
        var blocksCaller = true

        /// Makes the configuration empty again, releasing only what it holds (S4).
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

        /// Whether other threads reach the run from its start: middleware, or a `perform`'s task.
        var isSharedFromStart: Bool { hasMiddleware || !blocksCaller }
    }

    /// What few dispatches have: a timeout, why no store is reached, or a step prepared already.
    final class Details: Sendable {
        let timeout: Duration?
        let routingError: DispatchError?
        let prepared: PreparedStep?

        init(timeout: Duration?, routingError: DispatchError?, prepared: PreparedStep? = nil) {
            self.timeout = timeout
            self.routingError = routingError
            self.prepared = prepared
        }
    }

    /// The operation a store's reducer returned before the dispatch took the engine's path (a
    /// thread's shortcut, ``RouteShortcut``): the step of that store starts it instead of asking again.
    struct PreparedStep: @unchecked Sendable {
        // @unchecked: the operation has not started; the run that receives it is the only one to touch it.
        /// The store whose reducer answered (retained: compared by identity).
        let store: AnyObject
        let operation: Operation
    }

    /// Where `field` sits in the body, computed where used: it folds to a constant (S4, S5).
    @inline(__always)
    static func offset<Field>(of field: KeyPath<Body, Field>) -> Int {
        MemoryLayout<Body>.offset(of: field).unsafelyUnwrapped
    }

    /// An idle run, for `lane` to drive, or a `.sync` caller when `nil`.
    static func make(lane: Lane?) -> TransactionRun {
        create(kind: .normal) { Body(transaction: .idle, isQueued: lane != nil, lane: lane) }
    }

    deinit { body.pointee.spilledSteps?.deallocate() }

    /// What the run keeps; stable for the run's lifetime.
    var body: UnsafeMutablePointer<Body> { withUnsafeMutablePointerToHeader { $0 } }

    /// The machine; touch it from the driver, or under the lock once the run is shared.
    var machine: UnsafeMutablePointer<TransactionMachine> {
        (UnsafeMutableRawPointer(body) + Self.offset(of: \.machine)).assumingMemoryBound(to: TransactionMachine.self)
    }

    /// Storage for `count` steps: the run's own for a few, a reused buffer beyond.
    @inline(__always)
    private func stepStorage(for count: Int) -> UnsafeMutablePointer<TransactionMachine.Step> {
        if count <= InlineSteps.capacity {
            // The tuple's elements are `Step`s, so its memory is bound to `Step`.
            return (UnsafeMutableRawPointer(body) + Self.offset(of: \.inlineSteps))
                .assumingMemoryBound(to: TransactionMachine.Step.self)
        }
        return spilledSteps(for: count)
    }

    /// Storage for a longer route's steps, kept and grown from one transaction to the next.
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

    /// Starts an idle run, which the caller owns alone, over for `transaction`.
    @inline(__always)
    func configure(
        transaction: consuming Transaction,
        route: consuming Route?,
        configuration: consuming Configuration
    ) {
        setTransaction(transaction)
        configure(route: route, configuration: configuration)
    }

    /// Starts an idle run over for a transaction nobody reads through it (``Transaction/idle``, S1); its
    /// fields own nothing, so they are initialized over, not destroyed first (S4, S5).
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
        (fields + Self.offset(of: \.route)).assumingMemoryBound(to: Route?.self).initialize(to: consume route)
        let settings = (fields + Self.offset(of: \.configuration)).assumingMemoryBound(to: Configuration.self)
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

    /// Sets the transaction whoever reads it through the run sees; the run is idle.
    @inline(__always)
    func setTransaction(_ transaction: consuming Transaction) {
        assert(body.pointee.transaction.id == 0, "DispatchStore: a run was given a second transaction")
        (UnsafeMutableRawPointer(body) + Self.offset(of: \.transaction)).assumingMemoryBound(to: Transaction.self)
            .initialize(to: consume transaction)
    }

    /// Makes a completed run that nothing else refers to idle for reuse, and returns its route, moved
    /// (S1), or `nil` if it ever suspended; locked, so that an earlier `cancel()` comes first.
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

    /// The transaction as middleware and a queued dispatch's caller get it: it cancels the run and
    /// reads the route through it (no retain of the shared route per dispatch, S5).
    func cancellableTransaction() -> Transaction {
        Transaction(
            id: body.pointee.transaction.id,
            action: body.pointee.transaction.action,
            mode: body.pointee.transaction.mode,
            targetIdentifier: body.pointee.transaction.targetIdentifier,
            links: .run(Reference(run: self))
        )
    }

    /// The stores the transaction reaches.
    var route: Route? { body.pointee.route }
    /// The transaction's action, boxed.
    var action: any ActionType { body.pointee.transaction.action }

    /// Calls `perform` with a pointer to the action, valid during the call.
    func withAction<Result>(_ perform: (UnsafeRawPointer) -> Result) -> Result {
        if let pointer = body.pointee.configuration.actionPointer { return perform(pointer) }
        return withUnsafeActionPointer(to: body.pointee.transaction.action, perform)
    }

    /// Takes the run's lock if other threads can reach it, and returns whether it did (for ``unlockMachine(_:)``).
    @inline(__always)
    func lockMachine() -> Bool {
        let shared = body.pointee.isShared
        if shared { lock() }
        return shared
    }

    /// Releases what ``lockMachine()`` took.
    @inline(__always)
    func unlockMachine(_ locked: Bool) { if locked { unlock() } }

    /// Locks the run for the drive's first step, and unshares it when `alone`: its drainer holds the
    /// only reference, and only the driver's finish hooks can make new ones, which share it (S4).
    @inline(__always)
    func lockMachine(startingAlone alone: Bool) -> Bool {
        let locked = lockMachine()
        if alone && locked && !body.pointee.hasSuspended && !body.pointee.configuration.isSharedFromStart {
            body.pointee.isShared = false
        }
        return locked
    }

    /// Keeps the error and the sequence number of step `index`; call with the machine locked.
    @inline(__always)
    func record(error: (any Error)?, sequenceNumber: UInt64, of index: Int) {
        let keepsNumber = sequenceNumber != 0 && body.pointee.configuration.readsResult
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

    /// The sequence number step `index` got, `nil` when not applied; call with the machine locked.
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
