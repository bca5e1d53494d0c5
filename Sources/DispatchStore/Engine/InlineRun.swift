import Foundation

/// A `.sync` transaction driven on its caller's stack, with no lock and no allocation, for as long
/// as every store's operation finishes at once (every inline reduction does).
///
/// Nothing else can reach the transaction meanwhile: it has no middleware, and the caller gets it
/// only once it is done. The moment a store's operation needs a finish hook (it may finish later,
/// on another thread), the transaction is handed over to a ``TransactionRun`` on the heap, which
/// the hook refers to and which drives it from there on, on the same thread.
///
/// Everything the host keeps is in one ``Frame`` in the caller's frame, reached through one pointer,
/// so that the host copies for free and the driver reads the route without reference counting (S1).
struct InlineRun: RunHost {
    /// What the inline host keeps in its caller's frame.
    ///
    /// Plain data only: the completion and the details are borrowed from the caller, and what the
    /// run may come to own (its records, the run it hands over to) is reached through pointers that
    /// ``InlineRun/run(_:route:completion:details:action:suspendedRuns:context:)`` frees. The frame
    /// then needs no initialising or destroying beyond its bytes (S1).
    struct Frame {
        var machine: TransactionMachine
        /// Room for the steps of a route of up to ``stepCapacity`` stores, one byte each.
        var steps: UInt64 = 0
        /// The completion, in the caller's frame.
        let completion: UnsafePointer<(@Sendable (DispatchResult) -> Void)?>
        /// The timeout and the routing error, held by the caller.
        let details: Unmanaged<RunConfiguration.Details>?
        /// When the transaction started (`DispatchTime.uptimeNanoseconds`), if it has a timeout.
        let startTime: UInt64?
        /// The errors of the failed steps, and the sequence numbers; allocated when the first is
        /// recorded.
        var records: UnsafeMutablePointer<StepRecords>?
        /// The run the transaction was handed over to, once it was (retained).
        var successor: Unmanaged<TransactionRun>?

        /// How many steps fit in the frame itself; longer routes keep them in a temporary allocation.
        static let stepCapacity = MemoryLayout<UInt64>.size / MemoryLayout<TransactionMachine.Step>.stride

        @inline(__always)
        init(
            completion: UnsafePointer<(@Sendable (DispatchResult) -> Void)?>,
            details: RunConfiguration.Details?
        ) {
            self.machine = TransactionMachine(count: 0)
            self.completion = completion
            self.details = details.map(Unmanaged.passUnretained)
            self.startTime = details?.timeout == nil ? nil : DispatchTime.now().uptimeNanoseconds
        }

        /// Frees what the run came to own.
        func release() {
            if let records {
                records.deinitialize(count: 1)
                records.deallocate()
            }
            successor?.release()
        }
    }

    private let frame: UnsafeMutablePointer<Frame>
    /// The transaction in the caller's frame, without its route until it is done.
    private let transaction: UnsafePointer<Transaction>
    /// The route, which the caller holds for as long as the transaction is driven here.
    private let route: Unmanaged<Route>?
    /// The action in the caller's frame, valid while the transaction is driven here.
    let actionPointer: UnsafeRawPointer
    /// Where a run taking over registers if it waits; the engine outlives the dispatch.
    private let suspendedRuns: Unmanaged<SuspendedRuns>

    /// Runs `transaction` on the calling thread to the end: on the stack while every step finishes
    /// at once, handed over to a run on the heap when one does not.
    ///
    /// - Parameters:
    ///   - transaction: A `.sync` transaction that nothing else can reach (no middleware), without
    ///     its route.
    ///   - route: The transaction's route, which the caller holds until the end.
    ///   - completion: Called once with the result, before this returns.
    ///   - details: The timeout and the routing error, if any.
    ///   - action: The action's value in the caller's frame.
    ///   - suspendedRuns: Where a run taking over registers if it waits.
    ///   - context: The calling thread's context.
    static func run(
        _ transaction: inout Transaction,
        route: Route?,
        completion: (@Sendable (DispatchResult) -> Void)?,
        details: RunConfiguration.Details?,
        action: UnsafeRawPointer,
        suspendedRuns: Unmanaged<SuspendedRuns>,
        context: ThreadContext
    ) {
        let count = route?.count ?? 0
        withUnsafePointer(to: completion) { completion in
            var frame = Frame(completion: completion, details: details)
            withUnsafeMutablePointer(to: &transaction) { transaction in
                withUnsafeMutablePointer(to: &frame) { frame in
                    let host = InlineRun(
                        frame: frame,
                        transaction: UnsafePointer(transaction),
                        route: route.map(Unmanaged.passUnretained),
                        actionPointer: action,
                        suspendedRuns: suspendedRuns
                    )
                    if count <= Frame.stepCapacity {
                        let offset = MemoryLayout<Frame>.offset(of: \.steps).unsafelyUnwrapped
                        let steps = (UnsafeMutableRawPointer(frame) + offset)
                            .assumingMemoryBound(to: TransactionMachine.Step.self)
                        host.drive(steps: steps, count: count, route, context)
                    } else {
                        withUnsafeTemporaryAllocation(of: TransactionMachine.Step.self, capacity: count) { steps in
                            host.drive(steps: steps.baseAddress.unsafelyUnwrapped, count: count, route, context)
                        }
                    }
                }
            }
            frame.release()
        }
    }

    /// Sets up the machine over `steps` and drives it.
    @inline(__always)
    private func drive(
        steps: UnsafeMutablePointer<TransactionMachine.Step>,
        count: Int,
        _ route: Route?,
        _ context: ThreadContext
    ) {
        frame.pointee.machine = TransactionMachine(
            steps: steps,
            count: count,
            reportsNeedWork: false,
            cancelled: false
        )
        var host = self
        _ = RunDriver.drive(&host, route: route, suspendedRuns: nil, context: context)
    }

    private init(
        frame: UnsafeMutablePointer<Frame>,
        transaction: UnsafePointer<Transaction>,
        route: Unmanaged<Route>?,
        actionPointer: UnsafeRawPointer,
        suspendedRuns: Unmanaged<SuspendedRuns>
    ) {
        self.frame = frame
        self.transaction = transaction
        self.route = route
        self.actionPointer = actionPointer
        self.suspendedRuns = suspendedRuns
    }

    var machine: UnsafeMutablePointer<TransactionMachine> {
        UnsafeMutableRawPointer(frame).advanced(by: MemoryLayout<Frame>.offset(of: \.machine).unsafelyUnwrapped)
            .assumingMemoryBound(to: TransactionMachine.self)
    }

    var completion: (@Sendable (DispatchResult) -> Void)? {
        frame.pointee.completion.pointee
    }

    var details: RunConfiguration.Details? {
        frame.pointee.details?.takeUnretainedValue()
    }

    var resultTransaction: Transaction {
        var result = transaction.pointee
        result.route = route?.takeUnretainedValue()
        return result
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
        frame.pointee.completion.pointee != nil
    }

    func withRecords<Result>(_ body: (inout StepRecords) -> Result) -> Result {
        if let records = frame.pointee.records { return body(&records.pointee) }
        let records = UnsafeMutablePointer<StepRecords>.allocate(capacity: 1)
        records.initialize(to: StepRecords())
        frame.pointee.records = records
        return body(&records.pointee)
    }

    /// Hands the transaction over to a run on the heap, which the returned hook reaches.
    func finishHook(for index: Int) -> StepFinishHook {
        let details = self.details
        let configuration = RunConfiguration(
            middleware: [],
            owner: nil,
            completion: completion,
            details: details,
            startsCancelled: false,
            blocksCaller: true,
            actionPointer: actionPointer
        )
        let timeout = details?.timeout
        let run = TransactionRun.takingOver(
            resultTransaction,
            configuration: configuration,
            machine: machine.pointee,
            records: frame.pointee.records?.pointee ?? StepRecords(),
            deadline: frame.pointee.startTime.flatMap { start in
                timeout.map { DispatchTime(uptimeNanoseconds: start) + $0.dispatchInterval }
            }
        )
        frame.pointee.successor = .passRetained(run)
        return run.finishHook(for: index)
    }

    func didStart(_ index: Int, _ begun: StepStart, context: ThreadContext) -> DriveResult? {
        guard let successor = frame.pointee.successor?.takeUnretainedValue() else { return nil }
        return successor.finishOnCaller(
            afterStarting: index,
            begun,
            suspendedRuns: suspendedRuns.takeUnretainedValue(),
            context: context
        )
    }

    func prepareToWait(suspendedRuns: SuspendedRuns?) -> SuspendedRuns.Policy {
        preconditionFailure("DispatchStore: an inline transaction waits for an operation it did not hand over")
    }

    func apply(_ policy: SuspendedRuns.Policy) {}

    /// Not cancellable: nothing can hold the transaction while it is driven inline.
    func cancellableTransaction() -> Transaction {
        resultTransaction
    }

    func didComplete() {}
}
