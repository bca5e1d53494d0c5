import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

extension Applier {
    /// Deals with a message after a gap, from the message `expected` to the one before `found`: reads
    /// again from `expected` when the stream still holds it, loads a snapshot covering the gap when
    /// the stream's limits discarded it, or stops naming the gap; it never skips a message.
    ///
    /// A failure that may pass (no answer in time, a leader being elected) leaves it to a later
    /// turn: the reader opens again from the message after the last applied, a little later, and
    /// finds the gap again.
    ///
    /// - Throws: ``ReplicationError/Code/gap`` naming the messages, or
    ///   ``ReplicationError/Code/unavailable`` for a failure that will not pass.
    func fillGap(from expected: UInt64, found: UInt64) throws(ReplicationError) {
        let context = context
        let info: StreamInfo
        do {
            info = try blocking { () async throws(NATSError) in try await context.connection.streamInfo(context.stream)
            }
        } catch  where error.isTransient {
            return retryLater()
        } catch {
            throw unavailable(
                error,
                "cannot read the state of stream \(context.stream) after a gap before message \(found)"
            )
        }
        if info.firstSequence <= expected {
            // The missing messages are there: read them again (a reader that lost some).
            let missing: StreamMessage?
            do {
                missing = try blocking { () async throws(NATSError) in
                    try await context.connection.message(in: context.stream, sequence: expected)
                }
            } catch  where error.isTransient {
                return retryLater()
            } catch {
                throw unavailable(error, "cannot read message \(expected) of stream \(context.stream)")
            }
            guard missing != nil else { throw gapError(expected, found - 1, "they were deleted from the stream") }
            lock.withLock { machine.readAgain(from: expected, now: .now) }
            return
        }
        // The stream's limits discarded messages from `expected` on: a snapshot must cover them.
        guard let snapshots = context.snapshots else {
            throw gapError(expected, info.firstSequence - 1, "the stream's limits discarded them")
        }
        let loader = SnapshotLoader(
            snapshots: snapshots,
            dispatcher: context.dispatcher,
            replicated: context.replicated,
            migrations: context.migrations,
            onProblem: context.onError
        )
        let loaded: (sequence: UInt64, contents: Journal.SnapshotContents)?
        do {
            loaded = try blocking { () async throws(ReplicationError) in try await loader.latest() }
        } catch  where error.natsError?.isTransient == true {
            return retryLater()
        }
        guard let loaded, loaded.sequence + 1 >= info.firstSequence, loaded.sequence >= expected else {
            throw gapError(
                expected,
                info.firstSequence - 1,
                "the stream's limits discarded them and "
                    + (loaded.map { "the latest snapshot covers only up to message \($0.sequence)" }
                        ?? "no snapshot is readable")
            )
        }
        loaded.contents.restore()
        resume(lock.withLock { machine.snapshotLoaded(sequence: loaded.sequence, now: .now) })
    }

    /// Leaves the gap to a later turn: the reader opens again a little later.
    private func retryLater() {
        lock.withLock { machine.readerFailed(now: .now) }
    }

    private func gapError(_ first: UInt64, _ last: UInt64, _ why: String) -> ReplicationError {
        ReplicationError(
            .gap,
            stream: context.stream,
            sequence: first,
            message: "stream \(context.stream) no longer holds message"
                + (first == last ? " \(first)" : "s \(first) to \(last)")
                + " that this replica needs (\(why)); it stopped after message \(first - 1) rather than skip "
                + (first == last ? "it" : "them")
        )
    }

    /// Runs async work from the driver thread, which waits for it (it is not a thread of the
    /// cooperative pool).
    private func blocking<Result: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () async throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let box = Locked<Swift.Result<Result, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Swift.Result<Result, Failure>
            do throws(Failure) {
                outcome = .success(try await body())
            } catch {
                outcome = .failure(error)
            }
            box.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try box.withLock { $0 }!.get()
    }
}
