/// The state machine of one transaction: which step to start, report or skip next, when the run
/// must suspend, and when the transaction is finished.
///
/// A plain value without locks or threads, like swift-async-algorithms' `MergeStateMachine`: its
/// run feeds it events and carries out what `next(waitsFor:)` returns, outside any lock. A step goes
/// `waiting → running → finished → reported`; it starts once the steps it waits for are reported,
/// and is skipped when one of them did not succeed or the transaction was cancelled. The steps, a byte
/// each, live in the run's storage: the machine copies and destroys for free (S1, S7).
struct TransactionMachine {
    /// Where one store's step stands.
    enum Phase: UInt8 {
        case waiting = 0
        case running = 1
        case finished = 2
        case reported = 3
    }

    /// How a step ended, in two bits: a ``StoreOutcome/Status`` without the error of a failed
    /// step, which the run keeps (see `StoreOutcome.Status.init(_:error:)`).
    enum Ending: UInt8 {
        case succeeded = 0
        case cancelled = 1
        case failed = 2
        /// Not an ending: makes every two-bit value an `Ending`.
        case unused = 3
    }

    /// What the run does next.
    enum Next: Equatable {
        /// Start step `index`: announce it to the middleware, then start the store's operation.
        case start(Int)
        /// Step `index` ended: announce it if skipped, deliver its changes, report it to the middleware.
        case report(Int, announce: Bool, deliver: Bool)
        /// Every step is reported: the middleware's `didFinish`, then the completion. Returned once.
        case finish
        /// Nothing can go on until a running step finishes: the run lets go until then.
        case suspend
    }

    /// Why a transaction abandoned its running steps: its deadline or a shutdown's passed.
    enum AbandonReason: Equatable {
        case timeout
        case shutdown
    }

    /// What the caller of ``finished(_:ending:)`` does next: nothing (the driver will see the step),
    /// drive the run again (it was suspended), or only deliver the late changes of an abandoned step.
    enum Resumption: Equatable {
        case none
        case resume
        case late
    }

    /// The steps, in storage the run keeps alive while it uses the machine.
    private(set) var steps: UnsafeMutablePointer<Step>
    private(set) var count: Int
    /// Steps before this index are reported.
    private var firstUnreported = 0
    /// Whether reporting a step is work even without changes to deliver (middleware).
    private let reportsNeedWork: Bool
    /// Whether steps that have not started are skipped: the transaction was cancelled, or it
    /// abandoned its running steps (``abandonReason``).
    private(set) var isCancelled: Bool
    private(set) var abandonReason: AbandonReason?
    /// Whether a thread drives the run; only one does at a time.
    private(set) var isDriving = true
    private(set) var isFinished = false

    /// A machine for a new transaction whose `count` steps, in `steps`, are set to waiting here.
    @inline(__always)
    init(steps: UnsafeMutablePointer<Step>, count: Int, reportsNeedWork: Bool, cancelled: Bool = false) {
        if count == 1 {
            // Most routes have one store: a store of one byte, not a call to memset (S1).
            steps.pointee = Step()
        } else {
            steps.update(repeating: Step(), count: count)
        }
        self.steps = steps
        self.count = count
        self.reportsNeedWork = reportsNeedWork
        self.isCancelled = cancelled
    }

    /// Where a machine with no steps points: never read or written (its count is 0).
    static var noSteps: UnsafeMutablePointer<Step> {
        UnsafeMutablePointer(bitPattern: MemoryLayout<Step>.alignment).unsafelyUnwrapped
    }

    /// Stops the program on an event the machine's state does not allow (out of line: transitions stay small).
    @inline(never)
    static func invalid(_ what: String, step index: Int? = nil, _ phase: Phase? = nil) -> Never {
        let detail = index.map { " (step \($0)\(phase.map { ", \($0)" } ?? ""))" } ?? ""
        preconditionFailure("DispatchStore: a transaction \(what)\(detail)")
    }

    /// How step `index` ended; read once it has.
    func ending(of index: Int) -> Ending { steps[index].ending }
    /// The steps the transaction abandoned, in order.
    var abandonedSteps: [Int] { (0..<count).filter { steps[$0].wasAbandoned } }

    /// What the driving run does next: the first step in order that finished is reported, or that can
    /// start is started (or skipped); `.suspend` when only running steps remain; `waitsFor` has, for
    /// each step, the (lower) indices of the steps it waits for, or is `nil` when none waits.
    @inline(__always)
    mutating func next(waitsFor: WaitsForTable.View?) -> Next {
        if !isDriving || isFinished { Self.invalid("was driven after it finished or while another thread drove it") }
        var pending = false
        var index = firstUnreported
        while index < count {
            var step = steps[index]
            switch step.phase {
            case .reported:
                if !pending && index == firstUnreported { firstUnreported += 1 }
            case .running: pending = true
            case .finished:
                step.phase = .reported
                steps[index] = step
                if !pending && index == firstUnreported { firstUnreported += 1 }
                if !step.announced || step.needsDelivery || reportsNeedWork {
                    return .report(index, announce: !step.announced, deliver: step.needsDelivery)
                }
            case .waiting:
                switch readiness(of: index, waitsFor: waitsFor) {
                case .blocked: pending = true
                case .skip:
                    step.phase = .reported
                    step.ending = .cancelled
                    steps[index] = step
                    if !pending && index == firstUnreported { firstUnreported += 1 }
                    return .report(index, announce: true, deliver: false)
                case .ready:
                    step.phase = .running
                    step.announced = true
                    steps[index] = step
                    return .start(index)
                }
            }
            index += 1
        }
        if pending {
            isDriving = false
            return .suspend
        }
        isFinished = true
        return .finish
    }

    private enum Readiness {
        case ready
        case blocked
        case skip
    }

    @inline(__always)
    private func readiness(of index: Int, waitsFor: WaitsForTable.View?) -> Readiness {
        if isCancelled { return .skip }
        guard let waitsFor else { return .ready }
        var ready = Readiness.ready
        for waited in waitsFor.waited(by: index) {
            let step = steps[Int(waited)]
            switch step.phase {
            case .reported:
                if step.ending != .succeeded { return .skip }
            case .waiting, .running, .finished:
                ready = .blocked
            }
        }
        return ready
    }

    /// Skips step `index` instead of starting it: a middleware's `willDispatch` cancelled the transaction.
    mutating func skipStarting(_ index: Int) {
        var step = steps[index]
        if step.phase != .running { Self.invalid("skipped a step that is not starting", step: index, step.phase) }
        step.phase = .finished
        step.ending = .cancelled
        steps[index] = step
    }

    /// Step `index`'s operation started: it ended already (`ending`) or runs on (`nil`, ``finished(_:ending:)``
    /// follows); returns whether to cancel it now because the transaction was cancelled meanwhile.
    @inline(__always)
    mutating func started(_ index: Int, ending: Ending?, needsDelivery: Bool) -> Bool {
        var step = steps[index]
        switch step.phase {
        case .running:
            guard let ending else {
                step.needsDelivery = true
                steps[index] = step
                return isCancelled
            }
            step.phase = .finished
            step.ending = ending
            step.needsDelivery = needsDelivery
            steps[index] = step
            return false
        case .finished:
            // It finished on another thread first, or was abandoned.
            step.needsDelivery = step.needsDelivery || needsDelivery
            steps[index] = step
            return step.wasAbandoned
        case .waiting, .reported:
            Self.invalid("started a step that is not starting", step: index, step.phase)
        }
    }

    // MARK: Events from other threads

    /// Step `index`'s operation finished after it started (on any thread); returns whether to drive the
    /// run again, or only deliver a late change.
    mutating func finished(_ index: Int, ending: Ending) -> Resumption {
        var step = steps[index]
        guard step.phase == .running else {
            if !step.wasAbandoned { Self.invalid("had a step finish twice", step: index, step.phase) }
            return .late
        }
        step.phase = .finished
        step.ending = ending
        step.needsDelivery = true
        steps[index] = step
        return resumeIfWaiting()
    }

    /// Cancels the transaction (steps not started are skipped) and returns the running steps, whose
    /// operations the caller cancels; `nil` if already done.
    mutating func cancel() -> [Int]? {
        guard !isFinished, !isCancelled else { return nil }
        isCancelled = true
        return (0..<count).filter { steps[$0].phase == .running }
    }

    /// Abandons the running steps, reported cancelled now so that the completion runs even if an
    /// operation never finishes, and skips the others (the transaction counts as cancelled); returns
    /// the running ones and whether to drive the run again.
    mutating func abandon(_ reason: AbandonReason) -> (steps: [Int], resume: Bool)? {
        guard !isFinished, abandonReason == nil else { return nil }
        abandonReason = reason
        isCancelled = true
        var running: [Int] = []
        for index in 0..<count where steps[index].phase == .running {
            var step = steps[index]
            step.phase = .finished
            step.ending = .cancelled
            step.needsDelivery = true
            step.wasAbandoned = true
            steps[index] = step
            running.append(index)
        }
        return (running, resumeIfWaiting() == .resume)
    }

    private mutating func resumeIfWaiting() -> Resumption {
        guard !isDriving else { return .none }
        isDriving = true
        return .resume
    }
}

extension TransactionMachine {
    /// One store's step, in one byte.
    struct Step: Equatable {
        private var bits: UInt8

        /// A waiting step.
        init() { bits = 0 }

        var phase: Phase {
            // Every two-bit value is a phase.
            @inline(__always) get { unsafeBitCast(bits & 0b11, to: Phase.self) }
            @inline(__always) set { bits = bits & ~0b11 | newValue.rawValue }
        }

        /// How it ended, once finished (`.succeeded` until then).
        var ending: Ending {
            // Only `Ending` values are ever stored in these two bits.
            @inline(__always) get { unsafeBitCast((bits >> 2) & 0b11, to: Ending.self) }
            @inline(__always) set { bits = bits & ~0b1100 | newValue.rawValue << 2 }
        }

        /// Whether the middleware's `willDispatch` was called for it.
        var announced: Bool {
            @inline(__always) get { bits & 0b1_0000 != 0 }
            @inline(__always) set { bits = newValue ? bits | 0b1_0000 : bits & ~0b1_0000 }
        }

        /// Whether the store may have queued changes for its observers.
        var needsDelivery: Bool {
            @inline(__always) get { bits & 0b10_0000 != 0 }
            @inline(__always) set { bits = newValue ? bits | 0b10_0000 : bits & ~0b10_0000 }
        }

        /// Whether the transaction abandoned it while it was running.
        var wasAbandoned: Bool {
            @inline(__always) get { bits & 0b100_0000 != 0 }
            @inline(__always) set { bits = newValue ? bits | 0b100_0000 : bits & ~0b100_0000 }
        }
    }
}

extension StoreOutcome.Status {
    /// The status a step's ``TransactionMachine/Ending`` stands for, with the error of a failed step.
    init(_ ending: TransactionMachine.Ending, error: (any Error)?) {
        switch ending {
        case .succeeded: self = .succeeded
        case .cancelled, .unused: self = .cancelled
        case .failed:
            guard let error else { TransactionMachine.invalid("lost the error of a failed step") }
            self = .failed(error)
        }
    }

    /// The ending the machine keeps for this status (its error is kept apart).
    var ending: TransactionMachine.Ending {
        switch self {
        case .succeeded: .succeeded
        case .cancelled: .cancelled
        case .failed: .failed
        }
    }
}
