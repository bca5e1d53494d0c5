import DispatchStore
import Foundation

/// The middleware that keeps replicated stores to the stream: a dispatch that reaches one of them
/// is cancelled before any store runs, unless it is the applier's.
///
/// The applier admits its own dispatch before making it (``admit(_:)``): the first `willDispatch`
/// of a `.sync` dispatch runs on the dispatching thread, so the first transaction of the admitted
/// action type seen on the applier's thread is the applier's, and its id is remembered for the
/// stores after the first (whose steps may run on other threads).
final class ReplicationGuard: Middleware, Sendable {
    /// The replicated stores' identifiers.
    let replicated: Set<String>
    /// The replicated stores' action types: a dispatch by type of one of them reaches a replicated
    /// store.
    let replicatedTypes: Set<ObjectIdentifier>
    private let stream: String
    private let onRefusal: @Sendable (ReplicationError) -> Void
    private let state = Locked(State())

    private struct State {
        /// The applier's thread, set while it admits a dispatch.
        var admittedThread: ObjectIdentifier?
        var admittedType: ObjectIdentifier?
        /// The admitted transaction, once its first `willDispatch` was seen.
        var admittedID: UInt64?
        /// The last transaction refused, so that it is reported once.
        var lastRefused: UInt64?
        var refusedCount = 0
    }

    init(
        replicated: Set<String>,
        replicatedTypes: Set<ObjectIdentifier>,
        stream: String,
        onRefusal: @escaping @Sendable (ReplicationError) -> Void
    ) {
        self.replicated = replicated
        self.replicatedTypes = replicatedTypes
        self.stream = stream
        self.onRefusal = onRefusal
    }

    /// How many dispatches were refused.
    var refusedCount: Int {
        state.withLock { $0.refusedCount }
    }

    /// Admits the next dispatch of `type` made on the calling thread, until ``endAdmission()``.
    func admit(_ type: any ActionType.Type) {
        let thread = ObjectIdentifier(Thread.current)
        state.withLock { state in
            state.admittedThread = thread
            state.admittedType = ObjectIdentifier(type)
            state.admittedID = nil
        }
    }

    /// Ends the admission: the admitted dispatch returned.
    func endAdmission() {
        state.withLock { state in
            state.admittedThread = nil
            state.admittedType = nil
            state.admittedID = nil
        }
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        let reaches: Bool
        if let target = transaction.targetIdentifier {
            reaches = replicated.contains(target)
        } else {
            reaches = replicatedTypes.contains(ObjectIdentifier(type(of: action)))
        }
        guard reaches else { return }
        let thread = ObjectIdentifier(Thread.current)
        let verdict: Verdict = state.withLock { state in
            if state.admittedID == transaction.id { return .admitted }
            if state.admittedID == nil, state.admittedThread == thread,
                state.admittedType == ObjectIdentifier(type(of: action))
            {
                state.admittedID = transaction.id
                return .admitted
            }
            guard state.lastRefused != transaction.id else { return .refusedAgain }
            state.lastRefused = transaction.id
            state.refusedCount += 1
            return .refused
        }
        guard verdict != .admitted else { return }
        transaction.cancel()
        guard verdict == .refused else { return }
        let names = transaction.storeIdentifiers.filter(replicated.contains)
        onRefusal(
            ReplicationError(
                .changeOutsideStream,
                stream: stream,
                storeIdentifier: names.first ?? store.identifier,
                message: "dispatch #\(transaction.id) of \(action) reaches "
                    + (names.count == 1
                        ? "store '\(names[0])', which is"
                        : "stores \(names.map { "'\($0)'" }.joined(separator: ", ")), which are")
                    + " replicated through stream \(stream); it was cancelled before any store ran: change replicated "
                    + "stores with Replication.perform(_:)"
            )
        )
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

    private enum Verdict {
        case admitted, refused, refusedAgain
    }
}
