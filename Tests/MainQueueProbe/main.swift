// Runs `.mainThread` and `.sync` dispatches in a program whose main queue is driven by
// `RunLoop.main.run()` (argument `runloop`) or by `dispatchMain()` (argument `dispatchmain`),
// and exits 0 only if every operation and completion ran on the main queue.
//
// The test suite runs it as a subprocess: a test process cannot give up its own main thread.

import DispatchStore
import Foundation

struct Counter: StateType {
    var count = 0
}

enum Step: ActionType {
    case increase
}

/// Traps unless its operations run on the main queue.
final class MainQueueReducer: Reducer<Counter, Step> {
    override func operation(for action: Step, in store: Store<Counter, Step>) -> ActionOperation<Counter, Step> {
        ActionOperation(action: action, store: store) { operation, _, store in
            dispatchPrecondition(condition: .onQueue(.main))
            store.updateState { $0.count += 1 }
            operation.finish()
        }
    }
}

let backgroundDispatches = 200
let dispatcher = Dispatcher()
let store = Store<Counter, Step>(identifier: "counter", reducer: MainQueueReducer())
try dispatcher.register(store: store)
let completions = Countdown(backgroundDispatches)

final class Countdown: @unchecked Sendable {
    // @unchecked: `value` is only touched while holding `lock`.
    private let lock = NSLock()
    private var value: Int

    init(_ value: Int) {
        self.value = value
    }

    /// Counts one down; `true` when it reaches zero.
    func tick() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        value -= 1
        return value == 0
    }
}

DispatchQueue(label: "watchdog").asyncAfter(deadline: .now() + 30) {
    print("timed out with count \(store.state.count)")
    exit(2)
}

/// Dispatches from the main queue (inline) and from a background thread (queued to the main queue).
func exercise(expectInlineCount: Int) {
    dispatcher.dispatch(Step.increase, mode: .mainThread)
    guard store.state.count == expectInlineCount else {
        print("a .mainThread dispatch made on the main queue did not run inline")
        exit(1)
    }
    dispatcher.dispatch(Step.increase, mode: .sync)
    Thread.detachNewThread {
        for _ in 0..<backgroundDispatches {
            dispatcher.dispatch(Step.increase, mode: .mainThread) { _ in
                dispatchPrecondition(condition: .onQueue(.main))
                if completions.tick() {
                    print("ok: count \(store.state.count), main thread \(Thread.isMainThread)")
                    exit(0)
                }
            }
        }
    }
}

switch CommandLine.arguments.dropFirst().first {
case "runloop":
    exercise(expectInlineCount: 1)
    RunLoop.main.run()
case "dispatchmain":
    DispatchQueue.main.async { exercise(expectInlineCount: 1) }
    dispatchMain()
default:
    print("usage: MainQueueProbe runloop|dispatchmain")
    exit(64)
}
