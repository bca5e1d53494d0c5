import Foundation

/// A `.sync` transaction driven on its caller's stack, with no lock and no allocation, for as long
/// as every store's operation finishes at once (every inline reduction does).
///
/// Nothing else can reach the transaction meanwhile: it has no middleware, and the caller gets it
/// only once it is done. The moment a store's operation needs a finish hook (it may finish later,
/// on another thread), the transaction is handed over to a ``TransactionRun`` on the heap, which
/// the hook refers to and which drives it from there on, on the same thread.
struct InlineRun: RunHost {
    let machine: UnsafeMutablePointer<TransactionMachine>
    let transaction: UnsafeMutablePointer<Transaction>
    /// The rest of what the host keeps, in the caller's frame: every field is a pointer or a plain
    /// value, so that the host copies for free and needs no mutating method (which would make the
    /// driver copy it around calls that use it twice).
    private let frame: UnsafeMutablePointer<Frame>
    /// The action in the caller's frame, valid while the transaction is driven here.
    let actionPointer: UnsafeRawPointer

    /// What the inline host keeps in its caller's frame.
    struct Frame {
        let completion: (@Sendable (DispatchResult) -> Void)?
        let details: RunConfiguration.Details?
        /// When the transaction started: its deadline counts from there if it has a timeout.
        let startTime: DispatchTime?
        /// The errors of the failed steps, and the sequence numbers.
        var records = StepRecords()
        /// The run the transaction was handed over to, once it was.
        var successor: TransactionRun?

        init(completion: (@Sendable (DispatchResult) -> Void)?, details: RunConfiguration.Details?) {
            self.completion = completion
            self.details = details
            self.startTime = details?.timeout == nil ? nil : .now()
        }
    }

    init(
        machine: UnsafeMutablePointer<TransactionMachine>,
        transaction: UnsafeMutablePointer<Transaction>,
        frame: UnsafeMutablePointer<Frame>,
        actionPointer: UnsafeRawPointer
    ) {
        self.machine = machine
        self.transaction = transaction
        self.frame = frame
        self.actionPointer = actionPointer
    }

    var completion: (@Sendable (DispatchResult) -> Void)? {
        frame.pointee.completion
    }

    var details: RunConfiguration.Details? {
        frame.pointee.details
    }

    var route: Route? {
        transaction.pointee.route
    }

    var resultTransaction: Transaction {
        transaction.pointee
    }

    func withAction<Result>(_ body: (UnsafeRawPointer) -> Result) -> Result {
        body(actionPointer)
    }

    var hasMiddleware: Bool {
        false
    }

    var middleware: [any Middleware] {
        []
    }

    var owner: Dispatcher? {
        nil
    }

    func lockMachine() -> Bool {
        false
    }

    func unlockMachine(_ locked: Bool) {}

    /// None: every step so far finished at once, and inline reductions have no operation of their
    /// own (a step with one is handed over before it starts).
    func dependencies(of index: Int, in route: Route) -> [Operation] {
        []
    }

    var keepsSequenceNumbers: Bool {
        frame.pointee.completion != nil
    }

    func withRecords<Result>(_ body: (inout StepRecords) -> Result) -> Result {
        body(&frame.pointee.records)
    }

    /// Hands the transaction over to a run on the heap, which the returned hook reaches.
    func finishHook(for index: Int) -> StepFinishHook {
        let details = frame.pointee.details
        let configuration = RunConfiguration(
            middleware: [],
            owner: nil,
            completion: frame.pointee.completion,
            details: details,
            startsCancelled: false,
            blocksCaller: true,
            actionPointer: actionPointer
        )
        let timeout = details?.timeout
        let run = TransactionRun.takingOver(
            transaction.pointee,
            configuration: configuration,
            machine: machine.pointee,
            records: frame.pointee.records,
            deadline: frame.pointee.startTime.flatMap { start in timeout.map { start + $0.dispatchInterval } }
        )
        frame.pointee.successor = run
        return run.finishHook(for: index)
    }

    func didStart(
        _ index: Int,
        _ begun: StepStart,
        suspendedRuns: SuspendedRuns?,
        context: ThreadContext
    )
        -> DriveResult?
    {
        guard let successor = frame.pointee.successor else { return nil }
        return successor.finishOnCaller(afterStarting: index, begun, suspendedRuns: suspendedRuns, context: context)
    }

    func prepareToWait(suspendedRuns: SuspendedRuns?) -> SuspendedRuns.Policy {
        preconditionFailure("DispatchStore: an inline transaction waits for an operation it did not hand over")
    }

    func apply(_ policy: SuspendedRuns.Policy) {}

    /// Not cancellable: nothing can hold the transaction while it is driven inline.
    func cancellableTransaction() -> Transaction {
        transaction.pointee
    }

    func didComplete() {}
}
