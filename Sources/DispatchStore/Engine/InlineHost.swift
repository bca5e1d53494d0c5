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
struct InlineHost: RunHost {
    /// What the inline host keeps in its caller's frame.
    ///
    /// Plain data only: the action, its target, the route, the completion and the details are
    /// borrowed from the caller, and what the host may come to own (its records, the run it hands over to) is
    /// reached through pointers that ``InlineHost/drive(id:action:actionType:identifier:route:completion:details:suspendedRuns:context:)``
    /// frees. The frame then needs no initialising or destroying beyond its bytes (S1).
    struct Frame {
        var machine: TransactionMachine
        /// The transaction's id.
        let id: UInt64
        /// The action's type, to box the action when a transaction is needed.
        let actionType: any ActionType.Type
        /// The store named by the dispatch, if any, in the caller's frame.
        let identifier: UnsafePointer<String?>
        /// The route, which the caller holds for as long as the transaction is driven here.
        let route: Unmanaged<Route>?
        /// The action in the caller's frame, valid while the transaction is driven here.
        let action: UnsafeRawPointer
        /// The completion, in the caller's frame.
        let completion: UnsafePointer<Completion>
        /// The timeout and the routing error, held by the caller.
        let details: Unmanaged<RunConfiguration.Details>?
        /// Where a run taking over registers if it waits; the engine outlives the dispatch.
        let suspendedRuns: Unmanaged<SuspendedRuns>
        /// When the transaction started (`DispatchTime.uptimeNanoseconds`), if it has a timeout.
        let startTime: UInt64?
        /// The errors of the failed steps, and the sequence numbers; allocated when the first is
        /// recorded.
        var records: UnsafeMutablePointer<StepRecords>? = nil
        /// The run the transaction was handed over to, once it was (retained).
        var successor: Unmanaged<TransactionRun>? = nil

        /// Frees what the host came to own.
        func release() {
            if let records {
                records.deinitialize(count: 1)
                records.deallocate()
            }
            successor?.release()
        }
    }

    /// The completion, wrapped: a bare optional closure handed to `withUnsafePointer(to:)` is
    /// re-abstracted, which allocates a context for every dispatch that has one.
    struct Completion {
        let body: (@Sendable (DispatchResult) -> Void)?
    }

    /// How many stores a short route reaches at most: its steps have a fixed place on the stack.
    private static let shortRoute = 8

    /// The frame; the host is this one pointer, so that it is passed in a register (S1).
    private let frame: UnsafeMutablePointer<Frame>

    /// Drives a `.sync` transaction that nothing else can reach (no middleware) on the calling thread to
    /// the end: on the stack while every step finishes at once, handed over to a run on the heap when
    /// one does not.
    ///
    /// - Parameters:
    ///   - id: The transaction's id.
    ///   - action: The action's value in the caller's frame.
    ///   - actionType: The action's type.
    ///   - identifier: The store the dispatch names, if any.
    ///   - route: The transaction's route, which the caller holds until the end.
    ///   - completion: Called once with the result, before this returns.
    ///   - details: The timeout and the routing error, if any.
    ///   - suspendedRuns: Where a run taking over registers if it waits.
    ///   - context: The calling thread's context.
    static func drive(
        id: UInt64,
        action: UnsafeRawPointer,
        actionType: any ActionType.Type,
        identifier: String?,
        route: Route?,
        completion: (@Sendable (DispatchResult) -> Void)?,
        details: RunConfiguration.Details?,
        suspendedRuns: Unmanaged<SuspendedRuns>,
        context: ThreadContext
    ) {
        let count = route?.count ?? 0
        withUnsafePointer(to: Completion(body: completion)) { completion in
            withUnsafePointer(to: identifier) { identifier in
                // Builds the frame, with the machine over `steps`, and drives the transaction.
                func drive(steps: UnsafeMutablePointer<TransactionMachine.Step>) {
                    var frame = Frame(
                        machine: TransactionMachine(
                            steps: steps,
                            count: count,
                            reportsNeedWork: false,
                            cancelled: false
                        ),
                        id: id,
                        actionType: actionType,
                        identifier: identifier,
                        route: route.map(Unmanaged.passUnretained),
                        action: action,
                        completion: completion,
                        details: details.map(Unmanaged.passUnretained),
                        suspendedRuns: suspendedRuns,
                        startTime: details?.timeout == nil ? nil : DispatchTime.now().uptimeNanoseconds
                    )
                    withUnsafeMutablePointer(to: &frame) { frame in
                        let host = InlineHost(frame: frame)
                        _ = RunDriver.drive(host, route: route, suspendedRuns: nil, context: context)
                    }
                    frame.release()
                }
                // A constant capacity for short routes: a fixed slot in the stack frame, with no
                // size computed at run time.
                if count <= Self.shortRoute {
                    withUnsafeTemporaryAllocation(of: TransactionMachine.Step.self, capacity: Self.shortRoute) {
                        drive(steps: $0.baseAddress.unsafelyUnwrapped)
                    }
                } else {
                    withUnsafeTemporaryAllocation(of: TransactionMachine.Step.self, capacity: count) { steps in
                        drive(steps: steps.baseAddress.unsafelyUnwrapped)
                    }
                }
            }
        }
    }

    private init(frame: UnsafeMutablePointer<Frame>) {
        self.frame = frame
    }

    var machine: UnsafeMutablePointer<TransactionMachine> {
        UnsafeMutableRawPointer(frame).advanced(by: MemoryLayout<Frame>.offset(of: \.machine).unsafelyUnwrapped)
            .assumingMemoryBound(to: TransactionMachine.self)
    }

    var completion: (@Sendable (DispatchResult) -> Void)? {
        frame.pointee.completion.pointee.body
    }

    var details: RunConfiguration.Details? {
        frame.pointee.details?.takeUnretainedValue()
    }

    /// The transaction, built when it is needed: for the completion's result, or for a run taking over.
    var resultTransaction: Transaction {
        Transaction(
            id: frame.pointee.id,
            action: boxedAction(at: frame.pointee.action, of: frame.pointee.actionType),
            mode: .sync,
            targetIdentifier: frame.pointee.identifier.pointee,
            links: Transaction.Links(route: frame.pointee.route?.takeUnretainedValue())
        )
    }

    func withAction<Result>(_ body: (UnsafeRawPointer) -> Result) -> Result {
        body(frame.pointee.action)
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
        frame.pointee.completion.pointee.body != nil
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
            actionPointer: frame.pointee.action
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
            suspendedRuns: frame.pointee.suspendedRuns.takeUnretainedValue(),
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
