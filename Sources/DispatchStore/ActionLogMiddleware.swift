import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A middleware that writes every finished transaction whose action is `Codable` to a JSON Lines
/// file, so that a run can be replayed with ``ActionLog/replay(contentsOf:into:actionTypes:)``.
///
/// Each line is one JSON object for one transaction that at least one store handled:
///
/// ```json
/// {"id":42,"time":"2026-11-21T10:15:30.125Z","mode":"serial","stores":["stock","orders"],"type":"Inventory.InventoryAction","payload":{"restock":{"item":"apple","quantity":5}}}
/// ```
///
/// `id` is the transaction's id, `time` when it finished (ISO 8601, UTC), `stores` the stores that
/// handled it (finished normally), in the order they ran, `type` the action's type as
/// `String(reflecting:)` spells it, and `payload` the action as its `Encodable` conformance writes
/// it; `target` appears when the dispatch named one store. Transactions that no store handled are
/// not written, nor are actions that are not `Encodable` (they are counted in ``skippedCount``).
///
/// ```swift
/// let log = try ActionLogMiddleware(path: "/var/lib/inventory/actions.jsonl")
/// dispatcher.register(middleware: log)
/// ```
///
/// **Durability.** Each line reaches the operating system in a single `write(2)` as its transaction
/// ends, with no buffering in the process: a crash of the program loses at most the line being
/// written, which replay then reports as a truncated last line. Pass `syncsToDisk: true` to also
/// `fsync(2)` after every line, so that a power loss keeps every finished line, at the cost of a
/// disk flush per transaction.
///
/// - Note: Thread-safe; lines from transactions finishing at once on several threads are written
///   whole, one after the other, in the order their transactions finished.
public final class ActionLogMiddleware: Middleware, @unchecked Sendable {
    // @unchecked: the file descriptor and the counters are in `file`, behind its lock; the rest is
    // immutable.

    /// The file the log is written to.
    public let path: String
    /// Whether every line is flushed to the disk (`fsync`) before the transaction's completion runs.
    public let syncsToDisk: Bool
    private let onError: (@Sendable (ActionLogError) -> Void)?
    private let file: LockedBox<State>

    /// The open file and what was written to it.
    private struct State {
        var descriptor: Int32
        var written = 0
        var skipped = 0
        var failed = 0
    }

    /// Opens (or creates) the log file.
    ///
    /// - Parameters:
    ///   - path: Where to write. Missing parent directories are not created.
    ///   - appending: `true` (the default) keeps what the file holds and appends to it; `false`
    ///     empties it first.
    ///   - syncsToDisk: Whether to `fsync` after every line; see the durability note above.
    ///   - onError: Called with each error writing or encoding a line (the transaction itself is not
    ///     affected), on the thread that finished the transaction. Errors are counted in
    ///     ``failureCount`` either way.
    /// - Throws: ``ActionLogError`` with code ``ActionLogError/Code/unwritableFile`` naming the path
    ///   and the system's reason when the file cannot be opened for writing.
    public init(
        path: String,
        appending: Bool = true,
        syncsToDisk: Bool = false,
        onError: (@Sendable (ActionLogError) -> Void)? = nil
    ) throws {
        self.path = path
        self.syncsToDisk = syncsToDisk
        self.onError = onError
        let flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (appending ? 0 : O_TRUNC)
        let descriptor = open(path, flags, 0o644)
        guard descriptor >= 0 else {
            throw ActionLogError.unwritable(path, reason: String(cString: strerror(errno)))
        }
        self.file = LockedBox(State(descriptor: descriptor))
    }

    deinit {
        let descriptor = file.withLockedValue { $0.descriptor }
        if descriptor >= 0 { _ = closeDescriptor(descriptor) }
    }

    /// How many lines were written.
    public var writtenCount: Int {
        file.withLockedValue { $0.written }
    }

    /// How many handled transactions were not written because their action is not `Encodable`.
    public var skippedCount: Int {
        file.withLockedValue { $0.skipped }
    }

    /// How many lines could not be encoded or written.
    public var failureCount: Int {
        file.withLockedValue { $0.failed }
    }

    /// Closes the file.
    ///
    /// Transactions finishing later are counted as failures. Calling it again does nothing.
    public func close() {
        file.withLockedValue { file in
            if file.descriptor >= 0 { _ = closeDescriptor(file.descriptor) }
            file.descriptor = -1
        }
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

    /// Writes the transaction's line, when a store handled it and its action is `Encodable`.
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let stores = result.handledStores
        guard !stores.isEmpty else { return }
        guard let payload = result.transaction.action as? any Encodable else {
            file.withLockedValue { $0.skipped += 1 }
            return
        }
        let transaction = result.transaction
        let line = ActionLog.Line(
            id: transaction.id,
            time: Date(),
            mode: transaction.mode,
            target: transaction.targetIdentifier,
            stores: stores,
            type: ActionLog.typeName(of: Swift.type(of: transaction.action)),
            payload: payload
        )
        var data: Data
        do {
            data = try line.encoded()
        } catch {
            report(.unencodable(transaction: transaction, path: path, reason: "\(error)"))
            return
        }
        data.append(UInt8(ascii: "\n"))
        let failure: ActionLogError? = file.withLockedValue { file in
            guard file.descriptor >= 0 else {
                file.failed += 1
                return .unwritable(path, reason: "the log was closed; transaction #\(transaction.id) was not written")
            }
            if let reason = writeAll(data, to: file.descriptor) {
                file.failed += 1
                return .unwritable(path, reason: "\(reason); transaction #\(transaction.id) was not written")
            }
            file.written += 1
            return nil
        }
        if let failure { onError?(failure) }
    }

    /// Writes `data` to the file and flushes it if asked; call inside `file`'s lock.
    ///
    /// - Returns: The system's reason when it failed.
    private func writeAll(_ data: Data, to descriptor: Int32) -> String? {
        data.withUnsafeBytes { bytes -> String? in
            var offset = 0
            while offset < bytes.count {
                let count = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += count
            }
            if syncsToDisk && fsync(descriptor) != 0 {
                return String(cString: strerror(errno))
            }
            return nil
        }
    }

    private func report(_ error: ActionLogError) {
        file.withLockedValue { $0.failed += 1 }
        onError?(error)
    }
}

/// `close(2)`, under a name that does not clash with ``ActionLogMiddleware/close()``.
private func closeDescriptor(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}
