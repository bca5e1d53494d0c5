import DispatchStore
import Foundation
import TestSupport

struct Counter: StateType, Equatable {
    var count = 0
}

enum CounterAction: ActionType, Equatable, Codable {
    case increase
    case add(Int)
}

/// The reducer of the README: one `ActionOperation` per action.
final class CounterReducer: Reducer<Counter, CounterAction> {
    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { operation, action, store in
            store.updateState { state in
                switch action {
                case .increase: state.count += 1
                case .add(let amount): state.count += amount
                }
            }
            operation.finish()
        }
    }
}

/// The same logic as a synchronous `reduce` (the inline fast path).
final class InlineCounterReducer: Reducer<Counter, CounterAction> {
    override func reduce(_ action: CounterAction, into state: inout Counter) {
        switch action {
        case .increase: state.count += 1
        case .add(let amount): state.count += amount
        }
    }
}

/// A reducer whose operations wait for a gate and finish on another thread.
final class GatedCounterReducer: Reducer<Counter, CounterAction> {
    let gate: Gate
    let started: Gate?
    let startedCount: Countdown?

    init(gate: Gate, started: Gate? = nil) {
        self.gate = gate
        self.started = started
        self.startedCount = nil
    }

    /// Ticks `started` as each operation's body starts.
    init(gate: Gate, started: Countdown) {
        self.gate = gate
        self.started = nil
        self.startedCount = started
    }

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let gate = gate
        let started = started
        let startedCount = startedCount
        return ActionOperation(action: action, store: store) { operation, action, store in
            started?.open()
            startedCount?.tick()
            Thread.detachNewThread {
                // Long: the test opens the gate; the bound only keeps a failed test from hanging forever.
                gate.wait(seconds: 600)
                store.updateState { state in
                    if case .add(let amount) = action { state.count += amount } else { state.count += 1 }
                }
                operation.finish()
            }
        }
    }
}

func makeCounterStore(
    _ identifier: String = "counter",
    reducer: Reducer<Counter, CounterAction> = InlineCounterReducer(),
    waitsFor: [String] = []
) -> Store<Counter, CounterAction> {
    Store(identifier: identifier, reducer: reducer, waitsFor: waitsFor)
}

/// A middleware that logs every hook as a line.
final class EventLog: Middleware, Sendable {
    let events = Shared<[String]>([])
    let results = Shared<[DispatchResult]>([])

    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        events.append("will \(transaction.id) \(store.identifier)")
    }

    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        events.append("did \(transaction.id) \(store.identifier)")
    }

    func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        events.append("finish \(result.transaction.id)")
        results.append(result)
    }
}

struct Text: StateType, Equatable {
    var value = ""
}

enum TextAction: ActionType, Equatable {
    case append(String)
}

final class TextReducer: Reducer<Text, TextAction> {
    override func reduce(_ action: TextAction, into state: inout Text) {
        switch action {
        case .append(let string): state.value += string
        }
    }
}

/// An action type no store in the tests handles.
struct UnhandledAction: ActionType {}

/// Dispatches `action` in `mode` and waits for its completion (for any mode).
@discardableResult
func dispatchAndWait<Action: ActionType>(
    _ dispatcher: Dispatcher,
    _ action: Action,
    to identifier: String? = nil,
    mode: DispatchMode = .sync,
    timeout: Duration? = nil
) -> DispatchResult? {
    let result = Shared<DispatchResult?>(nil)
    let done = Gate()
    dispatcher.dispatch(action, to: identifier, mode: mode, timeout: timeout) { outcome in
        result.withLock { $0 = outcome }
        done.open()
    }
    guard done.wait() else { return nil }
    return result.current
}

/// A reducer whose operations run until they are cancelled, then finish (cancelled).
final class CancellableCounterReducer: Reducer<Counter, CounterAction> {
    /// Ticked when an operation's body starts.
    let started: Countdown

    init(started: Countdown = Countdown(1)) {
        self.started = started
    }

    override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        let started = started
        return ActionOperation(action: action, store: store) { operation, _, _ in
            operation.onCancel { operation.finish() }
            started.tick()
        }
    }
}

/// Polls `condition` until it holds; `false` after `seconds` (a failure, not an ordering tool).
func eventually(seconds: Double = 600, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}
