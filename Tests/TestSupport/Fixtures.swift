// The fixtures the test targets share: a counter and its reducers, a text store, a middleware that
// logs every hook, and helpers to wait for a dispatch.

public import DispatchStore
import Foundation

/// A counter: the state most tests use.
public struct Counter: StateType, Equatable {
    /// The count.
    public var count = 0

    /// A counter at 0.
    public init() {}

    /// A counter at `count`.
    public init(count: Int) {
        self.count = count
    }
}

/// What a counter does.
public enum CounterAction: ActionType, Equatable, Codable {
    /// Adds 1.
    case increase
    /// Adds the amount.
    case add(Int)
    /// Fails in `FailingCounterReducer` (the DispatcherTester's tests); the other reducers ignore it.
    case fail
}

/// The reducer of the README: one `ActionOperation` per action.
public final class CounterReducer: Reducer<Counter, CounterAction> {
    /// The operation for `action`.
    public override func operation(
        for action: CounterAction,
        in store: Store<Counter, CounterAction>
    ) -> ActionOperation<Counter, CounterAction> {
        ActionOperation(action: action, store: store) { operation, action, store in
            store.updateState { state in
                switch action {
                case .increase: state.count += 1
                case .add(let amount): state.count += amount
                case .fail: break
                }
            }
            operation.finish()
        }
    }
}

/// The same logic as a synchronous `reduce` (the inline fast path).
public final class InlineCounterReducer: Reducer<Counter, CounterAction> {
    /// Applies `action`.
    public override func reduce(_ action: CounterAction, into state: inout Counter) {
        switch action {
        case .increase: state.count += 1
        case .add(let amount): state.count += amount
        case .fail: break
        }
    }
}

/// A reducer whose operations wait for a gate and finish on another thread.
public final class GatedCounterReducer: Reducer<Counter, CounterAction> {
    /// What every operation waits for before it changes the state and finishes.
    public let gate: Gate
    /// Opened as an operation's body starts.
    public let started: Gate?
    /// Ticked as each operation's body starts.
    public let startedCount: Countdown?

    /// Opens `started` as an operation's body starts.
    public init(gate: Gate, started: Gate? = nil) {
        self.gate = gate
        self.started = started
        self.startedCount = nil
    }

    /// Ticks `started` as each operation's body starts.
    public init(gate: Gate, started: Countdown) {
        self.gate = gate
        self.started = nil
        self.startedCount = started
    }

    /// The operation for `action`.
    public override func operation(
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

/// A counter store, reduced inline unless `reducer` says otherwise.
public func makeCounterStore(
    _ identifier: String = "counter",
    reducer: Reducer<Counter, CounterAction> = InlineCounterReducer(),
    waitsFor: [String] = []
) -> Store<Counter, CounterAction> {
    Store(identifier: identifier, reducer: reducer, waitsFor: waitsFor)
}

/// A middleware that logs every hook as a line.
public final class EventLog: Middleware, Sendable {
    /// `will ID STORE`, `did ID STORE` and `finish ID`, in the order the hooks were called.
    public let events = Shared<[String]>([])
    /// The results `didFinish` received.
    public let results = Shared<[DispatchResult]>([])

    /// An empty log.
    public init() {}

    /// Logs `will ID STORE`.
    public func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        events.append("will \(transaction.id) \(store.identifier)")
    }

    /// Logs `did ID STORE`.
    public func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
        events.append("did \(transaction.id) \(store.identifier)")
    }

    /// Logs `finish ID` and keeps the result.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
        events.append("finish \(result.transaction.id)")
        results.append(result)
    }
}

/// A text: a second state type, handled by other stores than the counters.
public struct Text: StateType, Equatable {
    /// The text.
    public var value = ""

    /// An empty text.
    public init() {}

    /// The text `value`.
    public init(value: String) {
        self.value = value
    }
}

/// What a text does.
public enum TextAction: ActionType, Equatable {
    /// Appends the string.
    case append(String)
}

/// Appends, inline.
public final class TextReducer: Reducer<Text, TextAction> {
    /// Appends the string.
    public override func reduce(_ action: TextAction, into state: inout Text) {
        switch action {
        case .append(let string): state.value += string
        }
    }
}

/// An action type no store in the tests handles.
public struct UnhandledAction: ActionType {
    /// The action.
    public init() {}
}

/// Dispatches `action` in `mode` and waits for its completion (for any mode).
@discardableResult
public func dispatchAndWait<Action: ActionType>(
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
public final class CancellableCounterReducer: Reducer<Counter, CounterAction> {
    /// Ticked when an operation's body starts.
    public let started: Countdown

    /// Ticks `started` as each operation's body starts.
    public init(started: Countdown = Countdown(1)) {
        self.started = started
    }

    /// The operation for `action`.
    public override func operation(
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
public func eventually(seconds: Double = 600, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else { return false }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}
