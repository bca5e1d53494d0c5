/// The state machine of one transaction: which store's step to start, report or skip next, when the
/// run must wait, and when the transaction is complete.
///
/// A plain value with no locks, threads or Foundation, in the manner of swift-async-algorithms'
/// `MergeStateMachine`. The run that owns it feeds it events (a step started or finished, the
/// transaction was cancelled, its deadline passed, a shutdown gave up on it) and carries out what
/// `next(waitsFor:)` returns, outside any lock. Every mode drives the same machine.
///
/// Each step goes `waiting → running → finished → reported`, or straight from `waiting` to
/// `finished` (cancelled) when it is skipped. A step starts once every step it waits for is
/// reported, and is skipped when one of them did not finish normally, or when the transaction was
/// cancelled or given up on. The transaction is complete once every step is reported; `next`
/// says so exactly once.
///
/// The steps, a byte each, live in storage the owner provides (its stack, or a buffer it reuses),
/// so that the machine itself is a few words that copy and destroy for free (S1, S7). Errors of
/// failed steps are the owner's to keep; the machine records that a step failed.
struct TransactionMachine {
    /// Where one store's step stands.
    enum Phase: UInt8 {
        case waiting = 0
        case running = 1
        case finished = 2
        case reported = 3
    }

    /// How a step ended.
    enum Ending: UInt8 {
        case finished = 0
        case cancelled = 1
        case failed = 2
        /// Not an ending: makes every two-bit value an `Ending`.
        case unused = 3
    }

    /// What the run does next.
    enum Next: Equatable {
        /// Start step `index`: announce it (when there is middleware), then start the store's operation.
        case start(Int)
        /// Step `index` ended: announce it if it was not (a skipped step), deliver the store's changes
        /// if `deliver`, then report it to the middleware.
        case report(Int, announce: Bool, deliver: Bool)
        /// Every step is reported: call the middleware's `didFinish` and the completion. Returned once.
        case complete
        /// Nothing can go on until a running step finishes: the run lets go until then.
        case suspend
    }

    /// Why a transaction gave up on its running steps.
    enum GiveUpReason: Equatable {
        /// Its deadline passed.
        case timeout
        /// A shutdown's deadline passed while it was still running.
        case shutdown
    }

    /// What the caller of ``finished(_:ending:)`` does next.
    enum Resumption: Equatable {
        /// Nothing: the run is being driven and will see the step.
        case none
        /// Drive the run again: it was waiting for this step.
        case resume
        /// The transaction gave up on this step already: only deliver the store's late changes.
        case late
    }

    /// The steps, in storage the owner keeps alive for as long as it uses the machine.
    private(set) var steps: UnsafeMutablePointer<Step>
    /// How many stores the transaction reaches.
    private(set) var count: Int
    /// Steps before this index are reported.
    private var firstUnreported = 0
    /// Whether reporting a step is work for the run even without changes to deliver (middleware).
    private let reportsNeedWork: Bool
    private(set) var isCancelled: Bool
    /// Why the transaction gave up on its running steps, if it did.
    private(set) var giveUpReason: GiveUpReason?
    /// Whether a thread drives the run; only one does at a time.
    private(set) var isDriving = true
    private(set) var isComplete = false

    /// A machine for a new transaction, whose `count` steps are in `steps` (set to waiting here).
    ///
    /// - Parameters:
    ///   - steps: Storage for `count` steps, kept alive by the caller while it uses the machine.
    ///   - count: How many stores the transaction reaches.
    ///   - reportsNeedWork: Whether the run has middleware to call for every step.
    ///   - cancelled: Whether the transaction starts cancelled (every step is skipped).
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

    /// Stops the program: an event arrived that the machine's state does not allow (a broken invariant of the engine).
    ///
    /// Out of line, so that the transitions stay small.
    @inline(never)
    static func invalid(_ what: String, step index: Int? = nil, _ phase: Phase? = nil) -> Never {
        let detail = index.map { " (step \($0)\(phase.map { ", \($0)" } ?? ""))" } ?? ""
        preconditionFailure("DispatchStore: a transaction \(what)\(detail)")
    }

    /// Whether steps that have not started must be skipped: the transaction was cancelled or given up on.
    var isStopped: Bool {
        isCancelled || giveUpReason != nil
    }

    /// How step `index` ended; read once it has.
    func ending(of index: Int) -> Ending {
        steps[index].ending
    }

    /// The steps the transaction gave up on, in order.
    var givenUpSteps: [Int] {
        (0..<count).filter { steps[$0].wasGivenUp }
    }

    // MARK: Driving

    /// What the driving run does next; see ``Next``.
    ///
    /// Steps are considered in order: the first that finished is reported, or the first waiting
    /// one that can start is started (or skipped), whichever comes first. Returns `.suspend`, and
    /// stops counting as driven, when only running steps remain.
    ///
    /// - Parameter waitsFor: For each step, the indices of the steps it waits for (all lower);
    ///   `nil` when none waits for another (the route's dependencies, kept by the run, not here).
    /// - Returns: What to do next.
    @inline(__always)
    mutating func next(waitsFor: [[Int]]?) -> Next {
        if !isDriving || isComplete { Self.invalid("was driven after it completed or while another thread drove it") }
        var pending = false
        var index = firstUnreported
        while index < count {
            var step = steps[index]
            switch step.phase {
            case .reported:
                if !pending && index == firstUnreported { firstUnreported += 1 }
            case .running:
                pending = true
            case .finished:
                step.phase = .reported
                steps[index] = step
                if !pending && index == firstUnreported { firstUnreported += 1 }
                if !step.announced || step.needsDelivery || reportsNeedWork {
                    return .report(index, announce: !step.announced, deliver: step.needsDelivery)
                }
            case .waiting:
                switch readiness(of: index, waitsFor: waitsFor) {
                case .blocked:
                    pending = true
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
        isComplete = true
        return .complete
    }

    private enum Readiness {
        case ready
        case blocked
        case skip
    }

    @inline(__always)
    private func readiness(of index: Int, waitsFor: [[Int]]?) -> Readiness {
        if isStopped { return .skip }
        guard let waitsFor else { return .ready }
        var ready = Readiness.ready
        for dependency in waitsFor[index] {
            let step = steps[dependency]
            switch step.phase {
            case .reported:
                if step.ending != .finished { return .skip }
            case .waiting, .running, .finished:
                ready = .blocked
            }
        }
        return ready
    }

    /// The run announced step `index` and found the transaction stopped meanwhile (a middleware's
    /// `willDispatch` cancelled it): the step is skipped instead of started.
    mutating func skipStarting(_ index: Int) {
        var step = steps[index]
        if step.phase != .running { Self.invalid("skipped a step that is not starting", step: index, step.phase) }
        step.phase = .finished
        step.ending = .cancelled
        steps[index] = step
    }

    /// Step `index`'s operation started.
    ///
    /// - Parameters:
    ///   - index: The step.
    ///   - ending: How it ended, when it finished before starting returned; `nil` while it runs
    ///     (``finished(_:ending:)`` follows, from any thread).
    ///   - needsDelivery: Whether the store may have queued changes for its observers.
    /// - Returns: Whether to cancel the operation now: the transaction was cancelled or gave up on
    ///   the step while it started.
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
            // It finished on another thread first, or was given up on.
            step.needsDelivery = step.needsDelivery || needsDelivery
            steps[index] = step
            return step.wasGivenUp
        case .waiting, .reported:
            Self.invalid("started a step that is not starting", step: index, step.phase)
        }
    }

    // MARK: Events from other threads

    /// Step `index`'s operation finished after it started (on any thread).
    ///
    /// - Returns: Whether the caller must drive the run again, or only deliver a late change.
    mutating func finished(_ index: Int, ending: Ending) -> Resumption {
        var step = steps[index]
        guard step.phase == .running else {
            if !step.wasGivenUp { Self.invalid("had a step finish twice", step: index, step.phase) }
            return .late
        }
        step.phase = .finished
        step.ending = ending
        step.needsDelivery = true
        steps[index] = step
        return resumeIfWaiting()
    }

    /// Cancels the transaction: steps not started are skipped, running ones are to be cancelled.
    ///
    /// - Returns: The running steps, whose operations the caller cancels; `nil` when this had no
    ///   effect (the transaction had completed, or was cancelled already).
    mutating func cancel() -> [Int]? {
        guard !isComplete, !isCancelled else { return nil }
        isCancelled = true
        return (0..<count).filter { steps[$0].phase == .running }
    }

    /// Gives up on the running steps: they are reported as cancelled now, their operations are to be cancelled, and
    /// steps not started are skipped.
    ///
    /// Used when the deadline passes, and by a shutdown whose own deadline passed, so that the completion runs even if
    /// an operation never finishes.
    ///
    /// - Returns: The steps given up on and whether the caller must drive the run again; `nil` when
    ///   this had no effect (the transaction had completed, or was given up on already).
    mutating func giveUp(_ reason: GiveUpReason) -> (steps: [Int], resume: Bool)? {
        guard !isComplete, giveUpReason == nil else { return nil }
        giveUpReason = reason
        var running: [Int] = []
        for index in 0..<count where steps[index].phase == .running {
            var step = steps[index]
            step.phase = .finished
            step.ending = .cancelled
            step.needsDelivery = true
            step.wasGivenUp = true
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
    /// One store's step, in one byte, in the storage the machine's owner provides.
    struct Step: Equatable {
        private var bits: UInt8

        init() {
            bits = 0
        }

        var phase: Phase {
            // Every two-bit value is a phase.
            @inline(__always) get { unsafeBitCast(bits & 0b11, to: Phase.self) }
            @inline(__always) set { bits = bits & ~0b11 | newValue.rawValue }
        }

        /// How it ended, once finished (`.finished` until then, which is never read before).
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

        /// Whether the transaction gave up on it while it was running.
        var wasGivenUp: Bool {
            @inline(__always) get { bits & 0b100_0000 != 0 }
            @inline(__always) set { bits = newValue ? bits | 0b100_0000 : bits & ~0b100_0000 }
        }
    }
}
