public import DispatchStore
import Foundation

/// A middleware that records every transaction as it ends, and writes the run as one self-contained
/// HTML page to explore in a browser.
///
/// Register it like any middleware, before the transactions it should see:
///
/// ```swift
/// let inspector = Inspector()
/// dispatcher.register(middleware: inspector)
/// // ... the program runs ...
/// try inspector.writePage(to: "run.html")
/// ```
///
/// For each transaction it keeps the id, the time it ended, the mode, the action, the stores in the
/// order they applied it with each one's sequence number (``DispatchStore/Store/sequenceNumber``),
/// each store's outcome (succeeded, cancelled, failed with its error), the duration from the first
/// store's start to the end, and each touched store's state after it. States are kept as changes
/// from one state to the next plus occasional full states (keyframes), never one full copy per
/// transaction; the page rebuilds any of them exactly. A state whose type is `Encodable` is shown as
/// its JSON tree; any other through reflection (`Mirror`), marked as such.
///
/// **Memory** is bounded by ``limit``: the newest transactions are kept (10,000 by default, like
/// Redux DevTools' `maxAge`), older ones are dropped and the page says how many.
///
/// **Cost.** To find what a transaction changed, the inspector keeps each store's latest state and
/// compares the next one with it, member by member, skipping members whose storage is shared with
/// the previous state. Keeping that state means a reducer's next change to a collection in it copies
/// the collection first (copy-on-write), and a changed dictionary, set or array is compared entry by
/// entry: a transaction costs about what it changed plus the size of each collection it changed.
/// While the program runs, a transaction's row is made only when the rows are read (a page
/// written): until then the inspector keeps what the hooks saw, and a transaction dropped past the
/// limit before that costs no row.
///
/// Replays (``replay(contentsOf:into:actionTypes:reorderWindow:)``) and journal recoveries
/// (``recordRecovery(_:)``) run through the program's own dispatcher and stores with the
/// inspector attached, so the states shown are the ones the program computes; each row then carries
/// the line it comes from, and lines that cannot be read are rows of their own.
///
/// - Note: Thread-safe. Hooks may run on many threads at once; rows are kept in the order
///   transactions end. The state read after a store applied a transaction is exact when no other
///   transaction reaches that store in between (`.sync`, `.serial`, `.mainThread`, and `.async`
///   transactions that do not overlap on one store); otherwise the page marks the state as read
///   later.
public final class Inspector: Middleware, @unchecked Sendable {
    // @unchecked: the mutable state is in `state` and `subscriptions`, only touched under their
    // locks; the trees it holds are never handed out. Hooks run outside the lock where they read
    // stores.

    /// The number of transactions an inspector keeps unless told otherwise: 10,000.
    public static let defaultLimit = 10_000

    /// The most transactions kept; older ones are dropped.
    public let limit: Int
    let state: LockedBox<InspectorState>
    private let subscriptions = LockedBox<[Subscription]>([])
    /// The recorder followed (``follow(_:)``), held weakly.
    let followed = LockedBox(RecorderReference())
    let clock = ContinuousClock()
    /// The dispatcher the inspector is attached to, for the states of recorder moves.
    private let attached = LockedBox<WeakDispatcher>(WeakDispatcher())

    /// Creates an inspector.
    ///
    /// - Parameters:
    ///   - limit: The most transactions to keep, counted from the newest; 1 or more.
    ///   - title: What the page's header calls the run; the program's name by default.
    /// - Precondition: `limit` is at least 1: a smaller one stops the program with a message
    ///   naming it, as for `RecorderMiddleware`.
    public init(limit: Int = Inspector.defaultLimit, title: String? = nil) {
        precondition(
            limit >= 1,
            "Inspector(limit: \(limit)): the limit must be at least 1 (the number of transactions kept)"
        )
        self.limit = limit
        var initial = InspectorState(limit: limit)
        initial.source.title = title ?? URL(fileURLWithPath: CommandLine.arguments.first ?? "program").lastPathComponent
        state = LockedBox(initial)
    }

    /// How many transactions are kept now.
    public var transactionCount: Int {
        state.withLockedValue { $0.keptTransactions }
    }

    /// How many transactions were dropped because more than ``limit`` ended.
    public var droppedTransactionCount: Int {
        state.withLockedValue { $0.droppedTransactions }
    }

    /// Every problem met so far, each a sentence naming the file and line where there is one: lines
    /// that could not be read, unknown action types, divergences of a replay, states that failed to
    /// encode.
    public var problems: [String] {
        state.withLockedValue { state in state.problems.map(\.message) }
    }

    // MARK: Middleware

    /// Notes when the transaction's first store begins.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch.
    ///   - action: The action.
    ///   - store: The store about to receive it.
    public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        let now = clock.now
        state.withLockedValue { state in
            let index = state.pendingIndex(of: transaction.id)
            if state.pending[index].start == nil { state.pending[index].start = now }
        }
    }

    /// Reads the store's state and sequence number, as the store left them after the action.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch.
    ///   - action: The action.
    ///   - store: The store that received it.
    public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        guard let (stateAfter, sequenceNumber) = store.stateAndSequenceNumber else { return }
        state.withLockedValue { state in
            let index = state.track(store)
            state.pending[state.pendingIndex(of: transaction.id)].captures.append(
                (index, stateAfter, sequenceNumber)
            )
        }
    }

    /// Records the transaction: its outcome per store, its duration and the changes of each store
    /// it reached.
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        let end = clock.now
        let time = Date()
        state.withLockedValue { state in
            let pending = state.removePending(result.transaction.id)
            let ended = EndedTransaction(
                result: result,
                start: pending.start,
                end: end,
                time: time,
                captures: pending.captures
            )
            // A live transaction's row is made when the rows are read; a replayed line's now, as
            // it belongs to the line, and a followed recorder's transaction's when the recorder
            // says which history entry it is.
            if state.replay == nil && !state.recorder.followed {
                state.keep(ended)
            } else {
                state.settle()
                record(ended, in: &state)
            }
        }
    }

    /// Takes the states of the dispatcher's stores as the states before the first row.
    ///
    /// - Parameter dispatcher: The dispatcher the inspector was registered with.
    public func didAttach(to dispatcher: Dispatcher) {
        attached.withLockedValue { $0.dispatcher = dispatcher }
        let stores = dispatcher.stores
        withSettledState { state in
            for store in stores {
                _ = state.track(store)
            }
        }
    }

    /// Takes the new store's state as its state before the next row.
    ///
    /// - Parameters:
    ///   - store: The new store.
    ///   - dispatcher: The dispatcher.
    public func didRegister(store: any AnyStore, in dispatcher: Dispatcher) {
        withSettledState { _ = $0.track(store) }
    }

    // MARK: Recording

    /// Runs `body` on the recorded state, with a row made for every transaction that ended.
    func withSettledState<Result>(_ body: (inout InspectorState) throws -> Result) rethrows -> Result {
        try state.withLockedValue { state in
            state.settle()
            return try body(&state)
        }
    }

    private func record(_ ended: EndedTransaction, in state: inout InspectorState) {
        guard let context = state.replay, let entry = context.entry else {
            state.recordLive(ended, isCounted: false)
            return
        }
        recordReplayed(
            entry,
            outline: state.outline(of: ended),
            action: ended.result.transaction.action,
            error: ended.result.error,
            in: &state
        )
    }

    /// Records a replayed line's transaction, or merges it into the row of the same line when the
    /// replay dispatched the line in parts (one store at a time).
    private func recordReplayed(
        _ entry: InspectorState.ReplayedEntry,
        outline: InspectorState.Outline,
        action: any ActionType,
        error: DispatchError?,
        in state: inout InspectorState
    ) {
        let (steps, captures, expected) = (outline.steps, outline.captures, outline.expected)
        let duration = outline.duration
        if let row = state.replay?.entryRow, row == state.nextRowNumber - 1 {
            let changes = state.changes(for: captures, row: row, expected: expected)
            state.withRow(row) { row in
                guard case .transaction(var record) = row.content else { return }
                record.steps += steps
                record.parts += 1
                record.duration = [record.duration, duration].compactMap { $0 }.reduce(nil) { ($0 ?? .zero) + $1 }
                row.content = .transaction(record)
                row.changes += changes
            }
            state.encodeIfOverBudget(captures)
            return
        }
        var record = TransactionRecord(
            id: entry.id,
            mode: entry.mode,
            target: entry.target,
            action: action,
            duration: duration,
            steps: steps,
            error: error?.message
        )
        record.file = entry.file
        record.line = entry.line
        let number = state.nextRowNumber
        let changes = state.changes(for: captures, row: number, expected: expected)
        state.append(
            time: entry.time,
            .transaction(record),
            changes: changes
        )
        state.replay?.entryRow = number
        state.encodeIfOverBudget(captures)
    }

    /// The dispatcher the inspector is attached to, if it still exists.
    var dispatcher: Dispatcher? {
        attached.withLockedValue { $0.dispatcher }
    }

    /// Keeps `subscription` as long as the inspector lives.
    func keep(_ subscription: Subscription) {
        subscriptions.withLockedValue { $0.append(subscription) }
    }
}

extension InspectorState {
    /// The index of a store known only by its identifier (it left before the inspector saw it).
    mutating func track(named identifier: String) -> Int {
        if let index = storeIndex[identifier] { return index }
        storeIndex[identifier] = stores.count
        stores.append(StoreTrack(identifier: identifier, typeName: "", waitsFor: []))
        return stores.count - 1
    }
}
