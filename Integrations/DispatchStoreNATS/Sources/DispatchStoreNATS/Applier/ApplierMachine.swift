import DispatchStore
import Foundation

/// What a replica's applier knows, and what it decides: the messages applied, the reader of the
/// stream, the performs waiting for their message, the tasks waiting for a sequence number, and the
/// replica's lag.
///
/// A plain value without locks, threads or I/O, like the core's `TransactionMachine` and
/// swift-async-algorithms' `MergeStateMachine`: the ``Applier`` keeps it behind its lock, feeds it
/// events (a message delivered, one applied, an acknowledgement, a deadline, a stop), and carries
/// out what each event returns (which waiters to resume with what, whether to apply a message,
/// whether to open a reader) outside the lock. It is generic over what a waiter is, so that tests
/// drive it with plain values and no server.
struct ApplierMachine<Waiter> {
    typealias WaitResult = ApplierWaitResult

    /// A waiter to resume, and with what.
    struct Resumption {
        let waiter: Waiter
        let result: WaitResult
    }

    /// A perform's message, by its id.
    enum Perform {
        /// Registered, between two attempts; the sequence number the stream acknowledged, if known.
        case expected(sequence: UInt64?)
        /// An attempt waits, for the message to be applied here or for its append to fail.
        case waiting(sequence: UInt64?, deadline: ContinuousClock.Instant, waiter: Waiter)
        /// Applied while no attempt waited.
        case applied(Replication.AppliedMessage)
    }

    /// A task waiting until a sequence number is applied.
    struct SequenceWait {
        let target: UInt64
        let deadline: ContinuousClock.Instant?
        let waiter: Waiter
    }

    /// Where the reader of the stream stands.
    enum Reader: Equatable {
        /// To be opened, from this sequence number, once `at` has come.
        case due(from: UInt64, at: ContinuousClock.Instant)
        /// The driver is opening it.
        case opening(from: UInt64)
        /// Reading; its deliveries carry `generation`.
        case reading(generation: Int)
        /// The replica stopped.
        case closed
    }

    /// The stream's name, for errors.
    let stream: String
    /// After how long without a delivery the driver asks the stream where it ends.
    let quietCheck: Duration

    /// The sequence number of the last message applied.
    var applied: UInt64
    /// The highest sequence number the stream is known to hold: from deliveries (their number and
    /// how many come after them), acknowledgements and the stream's state.
    var streamEnd: UInt64
    /// When the last message was applied (or the replica started).
    var lastApplied: ContinuousClock.Instant
    /// When the reader last delivered a message, or the stream's end was last checked.
    var lastHeard: ContinuousClock.Instant
    var reader: Reader
    var generation = 0
    /// The replica's failure, or its close: every wait fails with it from then on.
    private(set) var failure: ReplicationError?
    private(set) var isClosed = false
    /// Whether the replica stopped (failed or closed): no wait begins, none is pending.
    ///
    /// A flag of its own, since every event asks it: reading `failure` would copy an error.
    private(set) var hasStopped = false
    /// Whether a check of the stream's end is under way.
    var checkingEnd = false
    /// Counts, for ``Replication/catchUp`` and the tests.
    var appliedCount = 0
    var repeatsSkipped = 0
    var snapshotsLoaded = 0
    var quietChecksThatRestarted = 0
    var unreadableSkipped = 0
    /// The last sequence number a snapshot loaded after a gap covered: a perform's message up to it
    /// may be applied without this replica seeing it.
    var coveredThrough: UInt64 = 0
    /// How many times in a row a reader could not be opened.
    var openFailures = 0

    var performs: [String: Perform] = [:]
    var sequenceWaits: [UInt64: SequenceWait] = [:]
    var nextWaitID: UInt64 = 0
    /// The deadline the timer is set for, if any.
    var timerDeadline: ContinuousClock.Instant?
    /// Told when a message up to `through` is delivered again (the tests' redelivery).
    var rereadWait: (through: UInt64, waiter: Waiter)?
    /// Whether anyone listens to lag changes.
    var reportsLag = false

    /// A machine for a replica whose stores hold the stream's messages up to `applied` (0 for
    /// none), whose reader is opened from the message after it.
    init(
        stream: String,
        applied: UInt64,
        streamEnd: UInt64,
        quietCheck: Duration = .seconds(5),
        now: ContinuousClock.Instant
    ) {
        self.stream = stream
        self.applied = applied
        self.streamEnd = max(streamEnd, applied)
        self.quietCheck = quietCheck
        lastApplied = now
        lastHeard = now
        reader = .due(from: applied + 1, at: now)
    }

    /// The error waits end with once the replica stopped.
    var stopError: ReplicationError {
        failure
            ?? ReplicationError(.stopped, stream: stream, message: "the replica of stream \(stream) was closed")
    }

    /// How far the replica is behind the stream.
    func lag(now: ContinuousClock.Instant) -> Replication.Lag {
        Replication.Lag(
            streamLastSequence: max(streamEnd, applied),
            appliedSequence: applied,
            sinceLastApplied: now - lastApplied
        )
    }

    // MARK: Stopping

    /// The replica failed: every waiter is resumed with `error`, the reader closes.
    ///
    /// - Returns: The waiters to resume; none when it had stopped already (the first failure stays).
    mutating func fail(_ error: ReplicationError) -> [Resumption] {
        guard !hasStopped else { return [] }
        failure = error
        hasStopped = true
        return endEverything(with: error)
    }

    /// The replica is closed: as ``fail(_:)``, with a ``ReplicationError/Code/stopped`` error.
    mutating func close() -> [Resumption] {
        guard !hasStopped else { return [] }
        isClosed = true
        hasStopped = true
        return endEverything(with: stopError)
    }

    private mutating func endEverything(with error: ReplicationError) -> [Resumption] {
        reader = .closed
        var resumptions: [Resumption] = []
        for (id, perform) in performs {
            if case .waiting(_, _, let waiter) = perform {
                resumptions.append(Resumption(waiter: waiter, result: .failed(error)))
                performs[id] = nil
            }
        }
        for wait in sequenceWaits.values {
            resumptions.append(Resumption(waiter: wait.waiter, result: .failed(error)))
        }
        sequenceWaits = [:]
        if let reread = rereadWait {
            resumptions.append(Resumption(waiter: reread.waiter, result: .reached(applied)))
            rereadWait = nil
        }
        timerDeadline = nil
        return resumptions
    }
}
