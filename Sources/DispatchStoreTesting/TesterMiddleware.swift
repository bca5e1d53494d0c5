import DispatchStore

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
