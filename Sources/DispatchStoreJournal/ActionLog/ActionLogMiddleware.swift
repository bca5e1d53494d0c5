public import DispatchStore
import Foundation

/// A middleware that writes every finished transaction whose action is `Codable` to a JSON Lines
/// file, so that a run can be replayed with ``ActionLog/replay(contentsOf:into:actionTypes:reorderWindow:)``.
///
/// Each line is one JSON object for one transaction that at least one store applied:
///
/// ```json
/// {"id":42,"time":"2026-11-21T10:15:30.125Z","mode":"serial","stores":["stock","orders"],"seq":[17,17],"type":"Inventory.InventoryAction","payload":{"restock":{"item":"apple","quantity":5}}}
/// ```
///
/// `id` is the transaction's id, `time` when it finished (ISO 8601, UTC), `stores` the stores that
/// applied the action, in the order their operations started, and `seq` the number each gave it
/// (``DispatchStore/Store/sequenceNumber``): what lets a replay give every store its actions in the order it
/// applied them. `type` is the action's type (``ActionLog/typeName(of:)``) and `payload` the action
/// as its `Encodable` conformance writes it. `target` appears when the dispatch named one store,
/// `unfinished` for stores whose operation ran and then was cancelled or failed, and `checks` for
/// state checksums (see ``Checksums``). Transactions that no store applied are not written, nor
/// are actions that are not `Encodable` (they are counted in ``skippedCount``).
///
/// ```swift
/// let log = try ActionLogMiddleware(path: "/var/lib/inventory/actions.jsonl")
/// dispatcher.register(middleware: log)
/// ```
///
/// **Durability.** Each line reaches the operating system in a single `write(2)` as its transaction
/// ends, before its completion runs, with no buffering in the process: a crash of the program loses
/// at most the line being written. Opening an existing log to append cuts such a torn tail away
/// first (bytes after the last newline, or a last line that is not JSON), saves its bytes beside the
/// log and reports it (``repairedTail``, and `onError` before the first new line), so new lines are
/// never glued to a partial one. Pass `syncsToDisk: true` to also `fsync(2)` after every line, so
/// that a power loss keeps every finished line, at the cost of a disk flush per transaction.
///
/// **One writer per log.** The log holds an advisory lock (`flock(2)`) on a file beside it, its path
/// plus `.lock`, from opening to ``close()``; the lock file holds the writer's process id and name.
/// Another writer on the same path, in another process or this one, is refused with
/// ``ActionLogError/Code/locked`` naming that holder. The kernel releases the lock when the process
/// dies, `kill -9` included. A character device (`/dev/null`, `/dev/full`) is written to as it is:
/// nothing is read, repaired or locked there. A log renamed while it is open keeps getting the lines
/// (its descriptor follows the file), and keeps the lock of its old path until it is closed.
///
/// **Failures.** A line that cannot be written (a full disk, a closed log) or encoded is an error:
/// ``firstFailure`` keeps the first, `onError` hears of each, and ``failureCount`` counts them. A
/// failed write leaves no partial line behind. A service should stop when its log fails.
///
/// - Note: Thread-safe; lines from transactions finishing at once on several threads are written
///   whole, one after the other, in the order their transactions finished.
public final class ActionLogMiddleware: Middleware, @unchecked Sendable {
    // @unchecked: the file and the counters are in `file`, behind its lock; the rest is immutable.

    /// Which state checksums the log records, for replays to compare.
    ///
    /// A checksum is a 64-bit digest of a store's state as its `Encodable` conformance writes it
    /// (keyed containers, sets and dictionaries in any order), taken under the store's lock together
    /// with its sequence number. It costs one pass over the state, so take them sparingly for large
    /// states. States that are not `Encodable` get none.
    public enum Checksums: Sendable, Hashable {
        /// No checksums.
        case none
        /// One checkpoint line with every store's checksum when ``close()`` is called.
        case onClose
        /// A checksum of each store every `n` actions it applies, and the checkpoint on close.
        case every(Int)
    }

    /// The file the log is written to.
    public let path: String
    /// Whether every line is flushed to the disk (`fsync`) before the transaction's completion runs.
    public let syncsToDisk: Bool
    /// Which checksums the log records.
    public let checksums: Checksums
    /// The torn tail cut away when the log was opened, if there was one.
    public let repairedTail: ActionLog.TornTail?
    private let onError: (@Sendable (ActionLogError) -> Void)?
    private let file: LockedBox<State>

    /// The open file and what was written to it.
    private struct State {
        var file: AppendFile?
        var dispatcher: Weak<Dispatcher>?
        var written = 0
        var skipped = 0
        var failed = 0
        var firstFailure: ActionLogError?
    }

    /// Opens (or creates) the log file.
    ///
    /// - Parameters:
    ///   - path: Where to write. Missing parent directories are not created.
    ///   - appending: `true` (the default) keeps what the file holds and appends to it, after cutting
    ///     away a torn tail; `false` empties it first.
    ///   - syncsToDisk: Whether to `fsync` after every line; see the durability note above.
    ///   - checksums: Which state checksums to record; ``Checksums/onClose`` by default.
    ///   - onError: Called with each error writing or encoding a line (the transaction itself is not
    ///     affected), on the thread that finished the transaction, and with the torn tail cut away
    ///     at opening (``ActionLogError/Code/tornTail``) before this initializer returns.
    /// - Throws: ``ActionLogError`` naming the path: ``ActionLogError/Code/unwritableFile`` with the
    ///   system's reason when the file cannot be opened for writing (a missing directory, a
    ///   directory, a symbolic link loop, a pipe); ``ActionLogError/Code/locked`` naming the holder
    ///   when another writer has the log open; or ``ActionLogError/Code/malformedLine`` when more
    ///   than its last line is damaged, or more than ``ActionLog/maximumLineLength`` bytes end it
    ///   without a newline (it is then left as it was).
    public init(
        path: String,
        appending: Bool = true,
        syncsToDisk: Bool = false,
        checksums: Checksums = .onClose,
        onError: (@Sendable (ActionLogError) -> Void)? = nil
    ) throws {
        self.path = path
        self.syncsToDisk = syncsToDisk
        self.checksums = checksums
        self.onError = onError
        let opened: AppendFile
        let lockPath = ActionLogMiddleware.lockPath(for: path)
        do {
            (opened, repairedTail) = try AppendFile.open(path: path, truncating: !appending, lockedBy: lockPath) {
                offset in "\(path).torn-\(offset)"
            }
        } catch {
            if let refusal = error.lockRefusal, refusal.isHeld {
                throw ActionLogError.locked(path, lockPath: lockPath, holder: refusal.reason)
            }
            if error.isDamaged {
                throw ActionLogError(
                    .malformedLine,
                    path: path,
                    message: "cannot append to the action log \(path): \(error.reason); it was left as it was"
                )
            }
            throw ActionLogError.unwritable(path, reason: error.reason)
        }
        self.file = LockedBox(State(file: opened))
        if let repairedTail { onError?(.torn(repairedTail, path: path, cut: true)) }
    }

    /// How many lines were written.
    public var writtenCount: Int {
        file.withLockedValue { $0.written }
    }

    /// How many transactions were not written because their action is not `Encodable`.
    public var skippedCount: Int {
        file.withLockedValue { $0.skipped }
    }

    /// How many lines could not be encoded or written.
    public var failureCount: Int {
        file.withLockedValue { $0.failed }
    }

    /// The first line that could not be encoded or written, or `nil` while every line was.
    public var firstFailure: ActionLogError? {
        file.withLockedValue { $0.firstFailure }
    }

    /// Writes the checkpoint (with ``Checksums/onClose`` or ``Checksums/every(_:)``), closes the
    /// file and releases its lock.
    ///
    /// The checkpoint holds the checksum and sequence number of every store of the dispatcher the
    /// log is registered with: a replay compares the stores' final states with it. Call this once
    /// the dispatcher is idle (after ``DispatchStore/Dispatcher/shutdown(_:timeout:)``). Transactions finishing
    /// later are counted as failures. Calling it again does nothing.
    public func close() {
        let dispatcher = file.withLockedValue { $0.file == nil ? nil : $0.dispatcher?.value }
        var checkpoint: Data?
        if checksums != .none, let dispatcher {
            let checks = dispatcher.stores.compactMap(\.stateDigest)
            if !checks.isEmpty { checkpoint = ActionRecord.checkpointLine(time: Date(), checks: checks) }
        }
        let failure: ActionLogError? = file.withLockedValue { state in
            guard let file = state.file else { return nil }
            defer {
                file.close()
                state.file = nil
            }
            if let checkpoint, let reason = file.append(checkpoint, sync: syncsToDisk) {
                return record(
                    .unwritable(path, reason: "\(reason); the closing checkpoint was not written"),
                    in: &state
                )
            }
            return nil
        }
        if let failure { onError?(failure) }
    }

    // MARK: Middleware

    /// Does nothing: lines are written when transactions finish.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch.
    ///   - action: The action.
    ///   - store: The store.
    public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    /// Does nothing: lines are written when transactions finish.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch.
    ///   - action: The action.
    ///   - store: The store.
    public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    /// Remembers the dispatcher, for the closing checkpoint.
    ///
    /// - Parameter dispatcher: The dispatcher the log was registered with.
    public func didAttach(to dispatcher: Dispatcher) {
        file.withLockedValue { $0.dispatcher = Weak(dispatcher) }
    }

    /// Writes the transaction's line, when a store applied its action and the action is `Encodable`.
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let line: Data
        switch ActionRecord.make(for: result, in: dispatcher, path: path, checksumEvery: checksumInterval) {
        case .none:
            return
        case .skipped:
            file.withLockedValue { $0.skipped += 1 }
            return
        case .failed(let error):
            report(error)
            return
        case .line(let data):
            line = data
        }
        let failure: ActionLogError? = file.withLockedValue { state in
            let id = result.transaction.id
            guard let file = state.file else {
                return record(
                    .unwritable(path, reason: "the log was closed; transaction #\(id) was not written"),
                    in: &state
                )
            }
            if let reason = file.append(line, sync: syncsToDisk) {
                return record(.unwritable(path, reason: "\(reason); transaction #\(id) was not written"), in: &state)
            }
            state.written += 1
            return nil
        }
        if let failure { onError?(failure) }
    }

    // MARK: Internals

    /// The lock file beside the log at `path`, held while the log is open (see ``WriterLock``).
    static func lockPath(for path: String) -> String {
        path + ".lock"
    }

    private var checksumInterval: Int? {
        if case .every(let interval) = checksums, interval > 0 { return interval }
        return nil
    }

    private func record(_ error: ActionLogError, in state: inout State) -> ActionLogError {
        state.failed += 1
        if state.firstFailure == nil { state.firstFailure = error }
        return error
    }

    private func report(_ error: ActionLogError) {
        file.withLockedValue { _ = record(error, in: &$0) }
        onError?(error)
    }
}
