import DispatchStore
import Foundation

/// A ``RecordStream`` read and decoded on a thread of its own, a few batches ahead of the caller,
/// so that a replay dispatches one batch while the next is parsed.
///
/// Memory stays bounded: at most ``capacity`` batches wait, each of at most ``batchSize`` items
/// and about ``batchBytes`` bytes of lines (long lines make short batches). The caller gets the
/// items in file order, and the torn tail or error where the file ends or stops.
final class PrefetchingRecordStream: @unchecked Sendable {
    // @unchecked: `state` is behind its lock; `current`, `position` and `tornTail` are only touched
    // by the one caller of `next()`; the stream only by the reading thread once it started.

    static let batchSize = 256
    static let batchBytes = 1 << 20
    static let capacity = 4

    private struct State {
        var batches: [[RecordStream.Item]] = []
        /// Set by the reader once the file is done: the torn tail, or the error that stopped it.
        var end: Result<ActionLog.TornTail?, ActionLogError>?
        var stopped = false
        /// Whether a reading thread was started and has not finished.
        ///
        /// What ``close()`` waits for. Only a started thread clears it, so it is set just before
        /// one starts.
        var readerRunning = false
    }

    private let state = LockedBox(State())
    /// Signalled each time the reader hands something over (a batch, the end, or both).
    private let handed = DispatchSemaphore(value: 0)
    /// Counts the free places for batches; starts at 0 and is raised to ``capacity`` (a semaphore
    /// must not be freed below its initial value).
    private let room = DispatchSemaphore(value: 0)
    /// Signalled once, when the reading thread has finished.
    private let finished = DispatchSemaphore(value: 0)
    private var current: [RecordStream.Item] = []
    private var position = 0
    /// The torn tail, known once ``next()`` returned `nil`.
    private(set) var tornTail: ActionLog.TornTail?

    /// Whether reading stops after the first malformed line.
    private let stopsAtMalformedLines: Bool

    /// Opens `path` and starts reading it on a thread of its own.
    ///
    /// Call ``close()`` when done with it, also after an error.
    ///
    /// - Parameters:
    ///   - path: The log file.
    ///   - actionTypes: The action types the log may hold.
    ///   - stopsAtMalformedLines: Whether to read no further than the first malformed line.
    /// - Throws: The errors of ``RecordStream/init(path:actionTypes:)``.
    init(
        path: String,
        actionTypes: [any (ActionType & Decodable).Type],
        stopsAtMalformedLines: Bool = true
    ) throws(ActionLogError) {
        self.stopsAtMalformedLines = stopsAtMalformedLines
        for _ in 0..<Self.capacity {
            room.signal()
        }
        // When opening throws, `self` is already whole and its deinit runs `close()`: with no reader
        // marked running, that returns at once instead of waiting for a thread that never started.
        let handoff = Handoff(stream: try RecordStream(path: path, actionTypes: actionTypes))
        state.withLockedValue { $0.readerRunning = true }
        // The thread keeps `self` alive until it has read to the end or `close()` stopped it.
        Thread.detachNewThread { [self] in
            read(handoff.stream)
        }
    }

    /// The next item, or `nil` at the end of the file.
    ///
    /// - Throws: ``ActionLogError/Code/unreadableFile`` when reading failed.
    func next() throws(ActionLogError) -> RecordStream.Item? {
        if position < current.count {
            position += 1
            return current[position - 1]
        }
        while true {
            let taken: Result<[RecordStream.Item], ActionLogError>?? = state.withLockedValue { state in
                if !state.batches.isEmpty { return .some(.success(state.batches.removeFirst())) }
                switch state.end {
                case .success(let tail):
                    tornTail = tail
                    return .some(nil)
                case .failure(let error): return .some(.failure(error))
                case nil: return nil
                }
            }
            switch taken {
            case .some(.some(.success(let batch))):
                room.signal()
                current = batch
                position = 1
                return current[0]
            case .some(.some(.failure(let error))):
                throw error
            case .some(.none):
                return nil
            case .none:
                handed.wait()
            }
        }
    }

    /// Stops the reader, if it is still going, and waits until it has closed the file.
    ///
    /// Returns at once when no reader runs: it finished, or the file never opened.
    func close() {
        let running = state.withLockedValue { state in
            state.stopped = true
            return state.readerRunning
        }
        guard running else { return }
        // Wakes a reader waiting for room; it finds the stream stopped.
        room.signal()
        finished.wait()
    }

    deinit {
        close()
    }

    private func read(_ stream: RecordStream) {
        var batch: [RecordStream.Item] = []
        batch.reserveCapacity(PrefetchingRecordStream.batchSize)
        var end: Result<ActionLog.TornTail?, ActionLogError>?
        var batchStart = 0
        while end == nil {
            do {
                if let item = try stream.next() {
                    batch.append(item)
                    if case .malformed = item, stopsAtMalformedLines { end = .success(nil) }
                } else {
                    end = .success(stream.tornTail)
                }
            } catch {
                end = .failure(error)
            }
            let full = stream.lastOffsetSeen - batchStart >= PrefetchingRecordStream.batchBytes
            if batch.count == PrefetchingRecordStream.batchSize || full || end != nil {
                guard hand(batch, end: end) else { break }
                batch.removeAll(keepingCapacity: true)
                batchStart = stream.lastOffsetSeen
            }
        }
        state.withLockedValue { $0.readerRunning = false }
        finished.signal()
    }

    /// Waits for room, then queues `batch` (and the end, if it is the last).
    ///
    /// - Returns: `false` when the caller stopped reading.
    private func hand(_ batch: [RecordStream.Item], end: Result<ActionLog.TornTail?, ActionLogError>?) -> Bool {
        if !batch.isEmpty { room.wait() }
        let handedOver = state.withLockedValue { state in
            guard !state.stopped else { return false }
            if !batch.isEmpty { state.batches.append(batch) }
            state.end = end
            return true
        }
        if handedOver { handed.signal() }
        return handedOver
    }
}

/// A stream handed to the reading thread.
private struct Handoff: @unchecked Sendable {
    // @unchecked: the thread that creates the stream hands it over at once and never touches it again.
    let stream: RecordStream
}
