import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import Foundation

/// Writes a replica's snapshots to the bucket one at a time, off the applier's thread; a snapshot
/// taken while another is written waits, and only the newest waiting one is written.
final class SnapshotWriter: Sendable {
    private let store: SnapshotStore
    private let writer: String
    private let onError: (@Sendable (ReplicationError) -> Void)?
    private let state = Locked<State>(State())
    /// Entered while a drain writes.
    private let busy = DispatchGroup()

    private struct State {
        var waiting: (data: Data, sequence: UInt64)?
        var writing = false
        var written: [UInt64] = []
    }

    init(store: SnapshotStore, writer: String, onError: (@Sendable (ReplicationError) -> Void)?) {
        self.store = store
        self.writer = writer
        self.onError = onError
    }

    /// The sequence numbers of the snapshots this writer made the latest, oldest first.
    var written: [UInt64] {
        state.withLock { $0.written }
    }

    /// Writes `data`, the snapshot after message `sequence`, once the one being written is done.
    func submit(_ data: Data, sequence: UInt64) {
        let starts = state.withLock { state -> Bool in
            state.waiting = (data, sequence)
            defer { state.writing = true }
            return !state.writing
        }
        guard starts else { return }
        busy.enter()
        Task { await drain() }
    }

    /// Blocks until no snapshot is being written or waiting.
    ///
    /// Call it off the cooperative pool.
    func waitUntilIdle() {
        busy.wait()
    }

    private func drain() async {
        while let next = state.withLock({ state -> (data: Data, sequence: UInt64)? in
            defer { state.waiting = nil }
            if state.waiting == nil { state.writing = false }
            return state.waiting
        }) {
            do {
                if try await store.write(next.data, sequence: next.sequence, writer: writer) {
                    state.withLock { $0.written.append(next.sequence) }
                }
            } catch {
                onError?(
                    ReplicationError(
                        .snapshot,
                        stream: store.stream,
                        sequence: next.sequence,
                        natsError: error,
                        message: "\(store.name(next.sequence)) was not written: \(clause(of: error))"
                    )
                )
            }
        }
        busy.leave()
    }
}

/// Finds the latest snapshot a replica can use: `latest`, or `previous` when `latest` is damaged;
/// each checked (manifest, digest, the journal format's own checks) and decoded for the replicated
/// stores, without changing them.
struct SnapshotLoader {
    let snapshots: SnapshotStore
    let dispatcher: Dispatcher
    let replicated: [String]
    let migrations: [StateMigration]
    /// Hears of a damaged snapshot that was passed over.
    let onProblem: (@Sendable (ReplicationError) -> Void)?

    /// The latest usable snapshot, or `nil` when there is none.
    ///
    /// - Throws: ``ReplicationError`` when the bucket cannot be read, or a snapshot is of a newer
    ///   format or state version than this program reads (nothing older is better).
    func latest() async throws(ReplicationError) -> (sequence: UInt64, contents: Journal.SnapshotContents)? {
        for key in ["latest", "previous"] {
            let found: (manifest: SnapshotStore.Manifest, data: Data)?
            do {
                found = try await snapshots.read(key)
            } catch {
                switch error {
                case .damaged(let problem):
                    onProblem?(problem)
                    continue
                case .fatal(let problem):
                    throw problem
                }
            }
            guard let found else { continue }
            let source = snapshots.name(found.manifest.sequence)
            let contents: Journal.SnapshotContents
            do {
                contents = try Journal.decodeSnapshot(
                    found.data,
                    for: dispatcher,
                    source: source,
                    migrations: migrations
                )
            } catch {
                let fatal = [.newerFormat, .newerStateVersion, .missingMigration].contains(error.code)
                let problem = ReplicationError(
                    .snapshot,
                    stream: snapshots.stream,
                    storeIdentifier: error.storeIdentifier,
                    sequence: found.manifest.sequence,
                    message: error.message
                )
                if fatal { throw problem }
                onProblem?(problem)
                continue
            }
            guard contents.position == found.manifest.sequence,
                Set(contents.sequenceNumbers.keys) == Set(replicated)
            else {
                onProblem?(
                    ReplicationError(
                        .snapshot,
                        stream: snapshots.stream,
                        sequence: found.manifest.sequence,
                        message: "\(source) holds the stores \(contents.sequenceNumbers.keys.sorted()) at message "
                            + "\(contents.position), not the replicated stores \(replicated.sorted()) at message "
                            + "\(found.manifest.sequence); it was passed over"
                    )
                )
                continue
            }
            return (found.manifest.sequence, contents)
        }
        return nil
    }
}
