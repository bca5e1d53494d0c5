import Foundation

/// What holds a transaction while ``RunDriver`` drives it: the machine, the configuration, the lock
/// if there is one, and what happens when a store's operation does not finish at once.
///
/// Two hosts share the one drive loop:
/// - ``InlineHost``: a `.sync` dispatch on its caller's stack, with no lock and no allocation, for
///   as long as every store's operation finishes at once. It hands the transaction over to a
///   ``TransactionRun`` the moment one does not.
/// - ``TransactionRun``: a run on the heap, behind its lock once other threads can reach it,
///   driven by its lane, its blocked `.sync` caller, or the thread that finishes its operation.
protocol RunHost {
    /// The transaction's machine, stable while the host lives.
    var machine: UnsafeMutablePointer<TransactionMachine> { get }
    /// The transaction as results carry it (not cancellable).
    var resultTransaction: Transaction { get }
    /// Whether middleware are called for the transaction.
    var hasMiddleware: Bool { get }
    /// The middleware, in registration order.
    var middleware: [any Middleware] { get }
    /// The dispatcher, for the middleware's `didFinish`; `nil` without middleware.
    var owner: Dispatcher? { get }
    /// Called once with the result.
    var completion: (@Sendable (DispatchResult) -> Void)? { get }
    /// The timeout and the routing error, if any.
    var details: RunConfiguration.Details? { get }
    /// Calls `body` with a pointer to the action, valid during the call.
    func withAction<Result>(_ body: (UnsafeRawPointer) -> Result) -> Result

    /// Takes the host's lock, if other threads can reach the machine.
    ///
    /// - Returns: Whether it did; pass it to `unlockMachine(_:)`.
    func lockMachine() -> Bool

    /// Releases what `lockMachine()` took.
    func unlockMachine(_ locked: Bool)

    /// Takes the lock as `lockMachine()` does, before the drive's first step; with `alone`, the
    /// driver holds the only reference to the host and may skip the lock from then on, until it
    /// hands the host out again.
    func lockMachine(startingAlone alone: Bool) -> Bool

    /// The operations of the steps `index` waits for; call with the machine locked.
    func dependencies(of index: Int, in route: Route) -> [Operation]

    /// What step `index`'s operation calls if it finishes after starting (on any thread).
    func finishHook(for index: Int) -> StepFinishHook

    /// Whether the transaction's result will be read (it has a completion or middleware): the
    /// sequence numbers the stores give the action are then kept for it.
    var keepsSequenceNumbers: Bool { get }

    /// Calls `body` with what the host keeps about the steps; call with the machine locked.
    func withRecords<Result>(_ body: (inout StepRecords) -> Result) -> Result

    /// Step `index` started as `begun`: the host records it and says whether its driver goes on.
    ///
    /// - Returns: `nil` when the caller goes on driving; otherwise how driving ended, because the
    ///   host handed the transaction over to another host, which took the event and drove on.
    func didStart(_ index: Int, _ begun: StepStart, context: ThreadContext) -> DriveResult?

    /// Called with the machine locked when the machine says the run must wait for an operation.
    ///
    /// - Returns: What a shutdown in progress wants done to the run.
    func prepareToWait(suspendedRuns: SuspendedRuns?) -> SuspendedRuns.Policy

    /// Carries out a shutdown's policy on the run, outside the lock.
    func apply(_ policy: SuspendedRuns.Policy)

    /// The transaction as handed to the middleware: able to cancel the run.
    func cancellableTransaction() -> Transaction

    /// The transaction completed: the host forgets any registration, before the result is reported.
    func didComplete()
}

extension RunHost {
    /// A host that no other thread can reach while it is driven has nothing to give up.
    @inline(__always)
    func lockMachine(startingAlone alone: Bool) -> Bool {
        lockMachine()
    }

    /// Step `index` started as `begun`: keeps what the result needs of it (its error, and the
    /// sequence number its store gave the action, which `beginStep` left in `context`) and tells
    /// the machine; call with the machine locked.
    ///
    /// - Returns: The step's operation when the transaction was stopped in the meantime: the
    ///   caller cancels it once it has unlocked.
    @inline(__always)
    func recordStarted(_ index: Int, _ begun: StepStart, context: ThreadContext) -> Operation? {
        if begun.error != nil || keepsSequenceNumbers {
            record(error: begun.error, sequenceNumber: context.appliedSequenceNumber, of: index)
        }
        let stopped = machine.pointee.started(index, ending: begun.ending, needsDelivery: begun.needsDelivery)
        return stopped ? begun.operation : nil
    }

    /// Keeps the error and the sequence number of step `index`; call with the machine locked.
    @inline(__always)
    func record(error: (any Error)?, sequenceNumber: UInt64, of index: Int) {
        let keepsNumber = sequenceNumber != 0 && keepsSequenceNumbers
        guard error != nil || keepsNumber else { return }
        let count = machine.pointee.count
        withRecords { records in
            if let error { records.recordFailure(error, of: index) }
            if keepsNumber { records.recordSequenceNumber(sequenceNumber, of: index, count: count) }
        }
    }
}
