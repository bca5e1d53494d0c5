import DispatchStore
import Foundation
import TestSupport
import Testing

@testable import DispatchStoreNATS

/// The applier's state machine, driven with plain waiters (numbers) and no server.
@Suite("The applier's state machine, without a server")
struct ApplierMachineTests {
    typealias Machine = ApplierMachine<Int>

    let start = ContinuousClock.now
    let result = sampleResult()

    func machine(applied: UInt64 = 0, streamEnd: UInt64 = 0) -> Machine {
        var machine = Machine(stream: "S", applied: applied, streamEnd: streamEnd, now: start)
        // Open the first reader, as `start` does.
        #expect(machine.nextWork(now: start, hasDeliveries: false) == .open(from: applied + 1, generation: 1))
        machine.readerOpened(now: start)
        return machine
    }

    func outcome(_ sequence: UInt64) -> Replication.AppliedMessage {
        Replication.AppliedMessage(sequence: sequence, result: result, messageID: nil, isOwn: true, storedAt: Date())
    }

    @Test("a perform: registered, sent, acknowledged, then resumed when its message is applied here")
    func performApplied() {
        var machine = machine()
        guard
            case .send(let timer) = machine.beginAttempt(
                "r.1",
                first: true,
                deadline: start + .seconds(30),
                waiter: 1,
                isCancelled: false
            )
        else {
            Issue.record("the first attempt does not send")
            return
        }
        #expect(timer == start + .seconds(30))
        #expect(machine.acknowledged("r.1", .success(1)).isEmpty)
        #expect(machine.lag(now: start).streamLastSequence == 1)
        #expect(machine.delivered(sequence: 1, pending: 0, generation: 1, now: start).0 == .apply)
        let resumed = machine.applied(sequence: 1, ownMessageID: "r.1", outcome: outcome(1), now: start)
        #expect(resumed.map(\.waiter) == [1] && resumed.first.map { applied($0.result) } == 1)
        #expect(machine.performs.isEmpty && machine.applied == 1)
    }

    @Test("an append that failed but was stored after all: the next attempt returns its outcome without sending")
    func appliedBetweenAttempts() {
        var machine = machine()
        _ = machine.beginAttempt("r.1", first: true, deadline: start + .seconds(30), waiter: 1, isCancelled: false)
        let failed = machine.acknowledged("r.1", .failure(NATSError(.timeout, servers: [], message: "no ack")))
        #expect(failed.map(\.waiter) == [1] && failed.allSatisfy { isAppendFailure($0.result) })
        // The message was stored meanwhile, and is applied before the perform tries again.
        #expect(machine.delivered(sequence: 1, pending: 0, generation: 1, now: start).0 == .apply)
        #expect(machine.applied(sequence: 1, ownMessageID: "r.1", outcome: outcome(1), now: start).isEmpty)
        guard
            case .resume(let result) = machine.beginAttempt(
                "r.1",
                first: false,
                deadline: start + .seconds(30),
                waiter: 2,
                isCancelled: false
            )
        else {
            Issue.record("the second attempt does not return the outcome at once")
            return
        }
        #expect(applied(result) == 1 && machine.performs.isEmpty)
    }

    @Test("an attempt after an acknowledgement waits for the message without sending it again")
    func acknowledgedBetweenAttempts() {
        var machine = machine()
        _ = machine.beginAttempt("r.1", first: true, deadline: start + .seconds(30), waiter: 1, isCancelled: false)
        // The acknowledgement of a first send comes after a failure report for a second one.
        _ = machine.acknowledged("r.1", .failure(NATSError(.timeout, servers: [], message: "no ack")))
        #expect(machine.acknowledged("r.1", .success(7)).isEmpty)
        guard
            case .wait = machine.beginAttempt(
                "r.1",
                first: false,
                deadline: start + .seconds(30),
                waiter: 2,
                isCancelled: false
            )
        else {
            Issue.record("an attempt of a stored message sends it again")
            return
        }
        // A failure report of an earlier send no longer ends the wait: the message is stored.
        #expect(machine.acknowledged("r.1", .failure(NATSError(.timeout, servers: [], message: "late"))).isEmpty)
    }

    @Test("deadlines: the timer is set for the earliest; when it fires, the waits past their deadline time out")
    func deadlines() {
        var machine = machine()
        guard
            case .send(let first) = machine.beginAttempt(
                "r.1",
                first: true,
                deadline: start + .seconds(5),
                waiter: 1,
                isCancelled: false
            ),
            case .send(let second) = machine.beginAttempt(
                "r.2",
                first: true,
                deadline: start + .seconds(9),
                waiter: 2,
                isCancelled: false
            ),
            case .waiting(_, let third) = machine.beginSequenceWait(
                through: 3,
                deadline: start + .seconds(2),
                waiter: 3,
                isCancelled: false
            )
        else {
            Issue.record("the waits did not begin")
            return
        }
        #expect(first == start + .seconds(5) && second == nil && third == start + .seconds(2))
        _ = machine.acknowledged("r.2", .success(1))
        var (expired, next) = machine.expire(now: start + .seconds(6), connection: "connected to nats://x")
        #expect(Set(expired.map(\.waiter)) == [1, 3] && next == start + .seconds(9))
        let messages = expired.compactMap { failure($0.result) }.map(\.message).sorted()
        #expect(
            messages[0].contains(
                "Message r.1 was not acknowledged by stream S in time (connection: connected to nats://x)"
            )
        )
        #expect(messages[1].contains("This replica had applied stream S up to message 0, not yet 3"))
        (expired, next) = machine.expire(now: start + .seconds(9), connection: "")
        #expect(expired.map(\.waiter) == [2] && next == nil)
        #expect(
            failure(expired[0].result)?.message.contains("was stored as number 1 of stream S but not applied") == true
        )
        #expect(failure(expired[0].result)?.code == .timedOut)
    }

    @Test("waits for a sequence number end when it is applied, when cancelled, or at once when it is reached")
    func sequenceWaits() {
        var machine = machine(applied: 4, streamEnd: 4)
        guard
            case .resume(.reached(4)) = machine.beginSequenceWait(
                through: 3,
                deadline: nil,
                waiter: 1,
                isCancelled: false
            ),
            case .waiting(let five, nil) = machine.beginSequenceWait(
                through: 5,
                deadline: nil,
                waiter: 2,
                isCancelled: false
            ),
            case .waiting(let six, nil) = machine.beginSequenceWait(
                through: 6,
                deadline: nil,
                waiter: 3,
                isCancelled: false
            )
        else {
            Issue.record("the waits did not begin as expected")
            return
        }
        #expect(five != six)
        #expect(machine.cancelSequenceWait(six)?.waiter == 3 && machine.cancelSequenceWait(six) == nil)
        #expect(machine.delivered(sequence: 5, pending: 3, generation: 1, now: start).0 == .apply)
        #expect(machine.applied(sequence: 5, ownMessageID: nil, outcome: outcome(5), now: start).map(\.waiter) == [2])
        #expect(machine.lag(now: start).behind == 3 && machine.lag(now: start).streamLastSequence == 8)
    }

    @Test("deliveries: the next one is applied, a repeat or a replaced reader's skipped, one after a gap fills it")
    func deliveries() {
        var machine = machine(applied: 10, streamEnd: 10)
        #expect(machine.delivered(sequence: 10, pending: 0, generation: 1, now: start).0 == .skip)
        #expect(machine.delivered(sequence: 13, pending: 0, generation: 1, now: start).0 == .gap(expected: 11))
        #expect(machine.repeatsSkipped == 1)
        // The gap: read again from the first missing message, with a new reader.
        machine.readAgain(from: 11, now: start)
        #expect(machine.delivered(sequence: 11, pending: 0, generation: 1, now: start).0 == .skip)
        #expect(machine.nextWork(now: start, hasDeliveries: true) == .open(from: 11, generation: 2))
        machine.readerOpened(now: start)
        #expect(machine.delivered(sequence: 11, pending: 0, generation: 1, now: start).0 == .skip)
        #expect(machine.delivered(sequence: 11, pending: 2, generation: 2, now: start).0 == .apply)
    }

    @Test("a reader that cannot be opened is tried again later, 0.1 s doubling up to 2 s")
    func readerBackoff() {
        var machine = machine(applied: 3)
        machine.readAgain(from: 4, now: start)
        var now = start
        var delays: [Duration] = []
        for _ in 0..<7 {
            guard case .open = machine.nextWork(now: now, hasDeliveries: false) else {
                Issue.record("no reader to open")
                return
            }
            machine.readerFailed(now: now)
            guard case .wait(let until?) = machine.nextWork(now: now, hasDeliveries: false) else {
                Issue.record("no wait after a failure")
                return
            }
            delays.append(until - now)
            now = until
        }
        #expect(delays == [100, 200, 400, 800, 1_600, 2_000, 2_000].map { .milliseconds($0) })
        #expect(machine.nextWork(now: now, hasDeliveries: false) == .open(from: 4, generation: 9))
        machine.readerOpened(now: now)
        machine.readerFailed(now: now)
        #expect(machine.nextWork(now: now, hasDeliveries: false) == .wait(until: now + .milliseconds(100)))
    }

    @Test("a quiet reader: after 5 s without a delivery the stream's end is asked; behind it, the reader opens again")
    func quietReader() {
        var machine = machine(applied: 20, streamEnd: 20)
        #expect(machine.nextWork(now: start + .seconds(1), hasDeliveries: false) == .wait(until: start + .seconds(5)))
        #expect(machine.nextWork(now: start + .seconds(5), hasDeliveries: false) == .checkEnd)
        // While the question is out, the driver sleeps until something happens.
        #expect(machine.nextWork(now: start + .seconds(6), hasDeliveries: false) == .wait(until: nil))
        machine.streamEndChecked(20, now: start + .seconds(6))
        #expect(machine.nextWork(now: start + .seconds(6), hasDeliveries: false) == .wait(until: start + .seconds(11)))
        #expect(machine.nextWork(now: start + .seconds(11), hasDeliveries: false) == .checkEnd)
        machine.streamEndChecked(25, now: start + .seconds(11))
        #expect(machine.nextWork(now: start + .seconds(11), hasDeliveries: false) == .open(from: 21, generation: 2))
        #expect(machine.quietChecksThatRestarted == 1 && machine.lag(now: start).behind == 5)
    }

    @Test("a snapshot loaded after a gap: covered performs fail, waits reached end, reading goes on after it")
    func snapshotAfterGap() {
        var machine = machine(applied: 5, streamEnd: 5)
        _ = machine.beginAttempt("r.1", first: true, deadline: start + .seconds(30), waiter: 1, isCancelled: false)
        _ = machine.acknowledged("r.1", .success(8))
        _ = machine.beginAttempt("r.2", first: true, deadline: start + .seconds(30), waiter: 2, isCancelled: false)
        _ = machine.acknowledged("r.2", .failure(NATSError(.timeout, servers: [], message: "no ack")))
        _ = machine.acknowledged("r.2", .success(9))
        _ = machine.beginSequenceWait(through: 10, deadline: nil, waiter: 3, isCancelled: false)
        let resumed = machine.snapshotLoaded(sequence: 10, now: start)
        #expect(Set(resumed.map(\.waiter)) == [1, 3])
        #expect(
            resumed.first { $0.waiter == 1 }.flatMap { failure($0.result) }?.message.contains("through a snapshot")
                == true
        )
        // r.2 was between attempts: its next attempt learns it was covered.
        guard
            case .resume(.failed(let covered)) = machine.beginAttempt(
                "r.2",
                first: false,
                deadline: start + .seconds(30),
                waiter: 4,
                isCancelled: false
            )
        else {
            Issue.record("a covered perform's attempt waits")
            return
        }
        #expect(covered.sequence == 9 && machine.snapshotsLoaded == 1)
        #expect(machine.nextWork(now: start, hasDeliveries: false) == .open(from: 11, generation: 2))
    }

    @Test("servers that disagree: an acknowledgement of a number applied without its message, or another number")
    func divergence() {
        // Acknowledged as number 3, which this replica applied as another message: it stops.
        var machine = machine(applied: 2, streamEnd: 2)
        _ = machine.beginAttempt("r.1", first: true, deadline: start + .seconds(30), waiter: 1, isCancelled: false)
        _ = machine.beginSequenceWait(through: 9, deadline: nil, waiter: 2, isCancelled: false)
        #expect(machine.delivered(sequence: 3, pending: 0, generation: 1, now: start).0 == .apply)
        #expect(machine.applied(sequence: 3, ownMessageID: nil, outcome: outcome(3), now: start).isEmpty)
        let stopped = machine.acknowledged("r.1", .success(3))
        #expect(Set(stopped.map(\.waiter)) == [1, 2] && machine.failure?.code == .diverged)
        #expect(machine.failure?.message.contains("message r.1 was acknowledged as number 3") == true)
        #expect(machine.nextWork(now: start, hasDeliveries: false) == .stop)
        // Acknowledged as 4, delivered as 5: it stops too.
        var other = self.machine(applied: 3, streamEnd: 3)
        _ = other.beginAttempt("r.2", first: true, deadline: start + .seconds(30), waiter: 3, isCancelled: false)
        #expect(other.acknowledged("r.2", .success(4)).isEmpty)
        _ = other.delivered(sequence: 4, pending: 1, generation: 1, now: start)
        #expect(other.applied(sequence: 4, ownMessageID: nil, outcome: outcome(4), now: start).isEmpty)
        let moved = other.applied(sequence: 5, ownMessageID: "r.2", outcome: outcome(5), now: start)
        #expect(moved.map(\.waiter) == [3] && other.failure?.code == .diverged)
        #expect(other.failure?.message.contains("this replica applied it as number 5") == true)
        // A snapshot that covered the number after a gap is not a disagreement.
        var covered = self.machine(applied: 2, streamEnd: 2)
        _ = covered.beginAttempt("r.3", first: true, deadline: start + .seconds(30), waiter: 4, isCancelled: false)
        _ = covered.snapshotLoaded(sequence: 10, now: start)
        #expect(covered.acknowledged("r.3", .success(6)).map { failure($0.result)?.code } == [.stopped])
        #expect(covered.failure == nil)
    }

    @Test("a failure ends every wait, and every later one, with it; the reader stops")
    func failureEndsEverything() {
        var machine = machine()
        _ = machine.beginAttempt("r.1", first: true, deadline: start + .seconds(30), waiter: 1, isCancelled: false)
        _ = machine.beginSequenceWait(through: 4, deadline: nil, waiter: 2, isCancelled: false)
        let error = ReplicationError(.gap, stream: "S", message: "gone")
        #expect(Set(machine.fail(error).map(\.waiter)) == [1, 2])
        #expect(machine.fail(ReplicationError(.stopped, stream: "S", message: "later")).isEmpty)
        #expect(machine.failure?.code == .gap && machine.nextWork(now: start, hasDeliveries: true) == .stop)
        guard
            case .resume(.failed(let later)) = machine.beginAttempt(
                "r.2",
                first: true,
                deadline: start,
                waiter: 3,
                isCancelled: false
            ),
            case .resume(.failed(let waited)) = machine.beginSequenceWait(
                through: 9,
                deadline: nil,
                waiter: 4,
                isCancelled: false
            )
        else {
            Issue.record("a wait began after the failure")
            return
        }
        #expect(later.code == .gap && waited.code == .gap)
    }

    @Test("cancellation: a cancelled task's attempt or wait fails at once, or when the cancellation comes")
    func cancellation() {
        var machine = machine()
        guard
            case .resume(.failed(let early)) = machine.beginAttempt(
                "r.1",
                first: true,
                deadline: start,
                waiter: 1,
                isCancelled: true
            )
        else {
            Issue.record("a cancelled task's attempt sends")
            return
        }
        #expect(early.code == .cancelled && machine.performs.isEmpty)
        _ = machine.beginAttempt("r.2", first: true, deadline: start + .seconds(9), waiter: 2, isCancelled: false)
        let cancelled = machine.cancelAttempt("r.2")
        #expect(cancelled?.waiter == 2 && cancelled.flatMap { failure($0.result) }?.code == .cancelled)
        #expect(machine.cancelAttempt("r.2") == nil)
    }

    @Test("the replica that appended a message writes the snapshot after it, every snapshotEvery messages")
    func snapshotsDue() {
        #expect(Machine.snapshotIsDue(after: 20, isOwn: true, every: 10))
        #expect(!Machine.snapshotIsDue(after: 20, isOwn: false, every: 10))
        #expect(!Machine.snapshotIsDue(after: 21, isOwn: true, every: 10))
        #expect(!Machine.snapshotIsDue(after: 20, isOwn: true, every: nil))
    }

    @Test("a message that is not a record is skipped: applied moves on, waits for it end")
    func unreadableSkipped() {
        var machine = machine(applied: 2, streamEnd: 3)
        _ = machine.beginSequenceWait(through: 3, deadline: nil, waiter: 1, isCancelled: false)
        #expect(machine.delivered(sequence: 3, pending: 0, generation: 1, now: start).0 == .apply)
        #expect(machine.skippedUnreadable(sequence: 3, now: start).map(\.waiter) == [1])
        #expect(machine.applied == 3 && machine.unreadableSkipped == 1 && machine.appliedCount == 0)
    }

    @Test("the tests' redelivery: resumed once the last applied message comes again")
    func rereading() {
        var machine = machine(applied: 3, streamEnd: 3)
        #expect(machine.requestRereading(from: 1, waiter: 1, now: start) == nil)
        #expect(machine.nextWork(now: start, hasDeliveries: false) == .open(from: 1, generation: 2))
        machine.readerOpened(now: start)
        #expect(machine.delivered(sequence: 2, pending: 1, generation: 2, now: start).1 == nil)
        #expect(machine.delivered(sequence: 3, pending: 0, generation: 2, now: start).1?.waiter == 1)
        #expect(machine.requestRereading(from: 5, waiter: 2, now: start)?.waiter == 2)
    }
}

/// The sequence number of an `.applied` result.
private func applied(_ result: ApplierWaitResult) -> UInt64? {
    if case .applied(let outcome) = result { return outcome.sequence }
    return nil
}

/// The error of a `.failed` result.
private func failure(_ result: ApplierWaitResult) -> ReplicationError? {
    if case .failed(let error) = result { return error }
    return nil
}

private func isAppendFailure(_ result: ApplierWaitResult) -> Bool {
    if case .appendFailed = result { return true }
    return false
}

/// A real dispatch's result, for outcomes.
private func sampleResult() -> DispatchResult {
    let dispatcher = Dispatcher()
    let result = Shared<DispatchResult?>(nil)
    dispatcher.dispatch(ClickAction.click, mode: .sync) { outcome in result.withLock { $0 = outcome } }
    return result.current!
}

extension ApplierMachine<Int>.Resumption: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.waiter == rhs.waiter
    }
}
