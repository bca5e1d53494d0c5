import Foundation

/// What a transaction run keeps while it is driven: its machine and what carrying out the machine's decisions needs.
///
/// Behind the run's lock once other threads can reach the run.
struct RunState {
    var machine: TransactionMachine
    // The flags sit in the bytes after the machine's last field, which would otherwise be padding (S5).
    /// Whether the timer that gives up at the deadline is set.
    var timerArmed = false
    /// Whether the run ever waited for an operation: a finish hook or a timer may then still refer to
    /// it, and it is not reused.
    var hasSuspended = false
    /// The machine's steps when there are more than fit in the run itself (`nil` otherwise): reused
    /// from one transaction to the next, grown when a route is longer.
    var spilledSteps: UnsafeMutablePointer<TransactionMachine.Step>?
    var spilledCapacity = 0
    /// The errors of the failed steps and the sequence numbers.
    var records = StepRecords()
    /// Each step's operation once started, for the steps that wait for it and to cancel it; empty
    /// until an operation of its own is started (inline reductions have none).
    var operations: [Operation?] = []
    /// When the operations must have finished, from the first drive, if the dispatch has a timeout.
    var deadline: DispatchTime? {
        get { deadlineNanoseconds == 0 ? nil : DispatchTime(uptimeNanoseconds: deadlineNanoseconds) }
        set { deadlineNanoseconds = newValue?.uptimeNanoseconds ?? 0 }
    }
    /// The deadline's uptime, 0 for none: 8 bytes, where an optional `DispatchTime` takes 16 (S5).
    private var deadlineNanoseconds: UInt64 = 0
    /// What a `.sync` caller blocked on the run waits on; created when the run first suspends.
    var callerSignal: DispatchSemaphore?
    /// Where the run registered when it first suspended, so that a shutdown can find it.
    var registeredIn: SuspendedRuns?

    /// A state whose machine's steps are at `inlineSteps` (room for `inlineCapacity` steps, in the
    /// run's own allocation).
    ///
    /// - Parameter inlineSteps: The room for a short route's steps; `nil` until the run knows where
    ///   its body lives (its first `reset` or `adopt` points the machine there).
    init(inlineSteps: UnsafeMutablePointer<TransactionMachine.Step>?) {
        machine = TransactionMachine(
            steps: inlineSteps ?? Self.noSteps,
            count: 0,
            reportsNeedWork: false,
            cancelled: false
        )
    }

    /// Where a machine with no steps points: never read or written (its count is 0).
    private static var noSteps: UnsafeMutablePointer<TransactionMachine.Step> {
        UnsafeMutablePointer(bitPattern: MemoryLayout<TransactionMachine.Step>.alignment).unsafelyUnwrapped
    }

    /// How many steps fit in the run itself.
    static let inlineCapacity = 8

    /// Frees the spilled steps' storage; call once, when the run is released.
    func release() {
        spilledSteps?.deallocate()
    }

    /// Storage for `count` steps: the run's own for a few, a reused buffer beyond.
    private mutating func storage(
        for count: Int,
        inline: UnsafeMutablePointer<TransactionMachine.Step>
    ) -> UnsafeMutablePointer<TransactionMachine.Step> {
        guard count > Self.inlineCapacity else { return inline }
        if let spilledSteps, count <= spilledCapacity { return spilledSteps }
        spilledSteps?.deallocate()
        spilledCapacity = max(count, spilledCapacity * 2)
        let created = UnsafeMutablePointer<TransactionMachine.Step>.allocate(capacity: spilledCapacity)
        created.initialize(repeating: TransactionMachine.Step(), count: spilledCapacity)
        spilledSteps = created
        return created
    }

    /// Takes over a machine driven so far elsewhere, with its steps and errors.
    mutating func adopt(
        _ machine: TransactionMachine,
        records: StepRecords,
        inline: UnsafeMutablePointer<TransactionMachine.Step>
    ) {
        self.machine = machine.moved(to: storage(for: machine.count, inline: inline))
        self.records = records
    }

    /// Starts over for a new transaction, keeping the storage of the steps and operations.
    mutating func reset(
        route: Route?,
        configuration: borrowing RunConfiguration,
        inline: UnsafeMutablePointer<TransactionMachine.Step>
    ) {
        let count = route?.count ?? 0
        machine = TransactionMachine(
            steps: storage(for: count, inline: inline),
            count: count,
            reportsNeedWork: !configuration.middleware.isEmpty,
            cancelled: configuration.startsCancelled
        )
        records.removeAll()
        if !operations.isEmpty { operations.removeAll(keepingCapacity: true) }
        deadline = nil
        timerArmed = false
        // Only what a suspended run set: assigning `nil` over `nil` would still call a release (S4).
        if hasSuspended {
            if callerSignal != nil { callerSignal = nil }
            if registeredIn != nil { registeredIn = nil }
            hasSuspended = false
        }
    }

    /// Records the operation of step `index` out of `count`.
    mutating func record(_ operation: Operation, at index: Int, of count: Int) {
        if operations.isEmpty {
            operations = Array(repeating: nil, count: count)
        }
        operations[index] = operation
    }

    /// The operations of the steps at `indices` that have one.
    func operations(at indices: [Int]) -> [Operation] {
        operations.isEmpty ? [] : indices.compactMap { operations[$0] }
    }
}
