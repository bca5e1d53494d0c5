import DispatchStore

/// The states of a dispatcher's stores at one moment, in registration order.
struct StoreStates: Sendable {
    /// The store identifiers, in registration order.
    private(set) var identifiers: [String] = []
    private var states: [String: any StateType] = [:]

    /// The states recorded in a consistent cut.
    init(_ snapshots: [StoreSnapshot]) {
        for snapshot in snapshots {
            append(snapshot.storeIdentifier, snapshot.state)
        }
    }

    /// The current states of `stores`, read one after the other.
    init(reading stores: [any AnyStore]) {
        for store in stores {
            append(store.identifier, store.anyState)
        }
    }

    private mutating func append(_ identifier: String, _ state: any StateType) {
        if states.updateValue(state, forKey: identifier) == nil {
            identifiers.append(identifier)
        }
    }

    subscript(identifier: String) -> (any StateType)? {
        states[identifier]
    }

    /// These states with `identifier`'s replaced by `state`.
    func replacing(_ identifier: String, with state: any StateType) -> StoreStates {
        var copy = self
        copy.append(identifier, state)
        return copy
    }
}

/// A transaction the tester saw finish.
struct FinishedTransaction: Sendable {
    /// The order in which the tester saw transactions finish, from 1.
    let sequence: Int
    let result: DispatchResult
    /// Every store's state when it finished (a consistent cut), or `nil` when none was taken (an
    /// unhandled action, or a cut that could not be taken on that thread).
    let states: StoreStates?
    /// The step it finished during, while that step waited for its own transaction (a `.sync`
    /// dispatch from an observer or an operation), for messages.
    var during: String?
    /// Whether that step accounted for it, so that it needs no receive.
    ///
    /// It did when the transaction succeeded and the step's expectations, or the step's own
    /// transaction, cover every store it reached.
    var isAccountedFor = false
}

/// A transaction that started in some store and has not finished.
struct InFlightTransaction: Sendable {
    let transaction: Transaction
    /// The stores whose operation started and has not ended.
    var running: [String] = []
}

/// What the tester and its middleware share, under one lock.
struct TesterState: Sendable {
    var exhaustivity: DispatcherTester.Exhaustivity
    var timeout: Duration
    var isFinished = false
    /// The step running now, as the test wrote it (`send(CounterAction.increase)`).
    var runningStep: String?
    var sequence = 0
    /// Finished transactions neither claimed by a `send` nor received yet, in finish order.
    var unclaimed: [FinishedTransaction] = []
    /// Transactions started in some store and not finished, by id.
    var inFlight: [UInt64: InFlightTransaction] = [:]
    /// The sends whose transaction has not finished (only timed-out ones outlive their step), by
    /// token, with the step that made them.
    var pendingSends: [Int: String] = [:]
    var nextSendToken = 0
    /// The states, from before the step, of the stores that only transactions finishing during a
    /// send changed, and that the send did not expect: their receives check those changes.
    var leftToReceive: [String: any StateType] = [:]
    /// The states the last step ended with, and the sequence of the transaction it checked.
    var baseline: StoreStates?
    var baselineSequence = 0
    /// The step that took the baseline, for messages.
    var baselineStep = "the tester's creation"
    /// Woken when a transaction finishes (a `receive` waiting for one).
    var finishWaiter: OneShot<Bool>?
    /// Woken when the last pending send finishes (`finish()` waiting for them).
    var sendsWaiter: OneShot<Bool>?
}

/// The middleware a tester registers: it sees every transaction of the dispatcher start and end,
/// and takes a consistent cut of all stores' states when each one finishes.
///
/// The cut comes from a `RecorderMiddleware` it drives: the recorder reads every store's state at
/// one instant without ever waiting on a store's lock from inside it.
final class TesterMiddleware: Middleware, Sendable {
    let state: Locked<TesterState>
    /// Keeps the cuts of the latest transactions; 64 covers the transactions that can finish on
    /// other threads between the recorder's hook and ours.
    private let cuts = RecorderMiddleware(limit: 64)

    init(state: Locked<TesterState>) {
        self.state = state
    }

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        state.withLock { state in
            state.inFlight[transaction.id, default: InFlightTransaction(transaction: transaction)].running.append(
                store.identifier
            )
        }
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        state.withLock { state in
            if let index = state.inFlight[transaction.id]?.running.firstIndex(of: store.identifier) {
                state.inFlight[transaction.id]?.running.remove(at: index)
            }
        }
    }

    func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        cuts.didFinish(result, in: dispatcher)
        let id = result.transaction.id
        let snapshots = result.isUnhandled ? nil : cuts.entries.last { $0.transaction?.id == id }?.snapshots
        let waiter: OneShot<Bool>? = state.withLock { state in
            state.sequence += 1
            state.inFlight[id] = nil
            state.unclaimed.append(
                FinishedTransaction(sequence: state.sequence, result: result, states: snapshots.map(StoreStates.init))
            )
            defer { state.finishWaiter = nil }
            return state.finishWaiter
        }
        waiter?.resume(true)
    }

    func didAttach(to dispatcher: Dispatcher) {
        cuts.didAttach(to: dispatcher)
    }

    func didDetach(from dispatcher: Dispatcher) {
        cuts.didDetach(from: dispatcher)
    }

    func didRegister(store: any AnyStore, in dispatcher: Dispatcher) {
        cuts.didRegister(store: store, in: dispatcher)
    }
}
