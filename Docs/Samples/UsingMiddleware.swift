// The samples of Docs/UsingMiddleware.md.

import DispatchStore
import Foundation
import Testing

enum UsingMiddleware {
    typealias CounterAction = GettingStarted.CounterAction

    // sample: logger
    final class Logger: Middleware {
        func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
            print("#\(transaction.id) \(action) -> \(store.identifier)")
        }

        func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
            print("#\(transaction.id) \(store.identifier) done")
        }

        func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
            if !result.succeeded { print("#\(result.transaction.id) did not succeed: \(result)") }
        }
    }
    // end-sample

    // sample: metrics
    /// Counts transactions per outcome.
    ///
    /// Hooks run on many threads at once: the counts sit behind a lock (``Locked``), so the class is
    /// `Sendable` as `Middleware` requires, checked by the compiler.
    final class Metrics: Middleware {
        private let counts = Locked([String: Int]())

        func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

        func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}

        func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {
            let outcome =
                result.isUnhandled
                ? "unhandled" : result.succeeded ? "succeeded" : result.wasCancelled ? "cancelled" : "failed"
            counts.withLock { $0[outcome, default: 0] += 1 }
        }

        var snapshot: [String: Int] {
            counts.value
        }
    }
    // end-sample

    // sample: maintenance
    /// Cancels every transaction while maintenance is on: no store's operation starts.
    final class MaintenanceSwitch: Middleware {
        private let isOn = Locked(false)

        func set(_ on: Bool) {
            isOn.withLock { $0 = on }
        }

        func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
            if isOn.value { transaction.cancel() }
        }

        func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {}
    }
    // end-sample

    static func run() throws -> (count: Int, metrics: [String: Int]) {
        let dispatcher = Dispatcher()
        let store = Store<Counter, CounterAction>(
            identifier: "counter",
            reducer: CounterReducer()
        )
        try dispatcher.register(store: store)
        // sample: register
        let metrics = Metrics()
        let maintenance = MaintenanceSwitch()
        dispatcher.register(middleware: Logger())  // called first
        dispatcher.register(middleware: maintenance)
        dispatcher.register(middleware: metrics)  // called last

        dispatcher.dispatch(CounterAction.increase, mode: .sync)
        maintenance.set(true)
        dispatcher.dispatch(CounterAction.increase, mode: .sync)  // cancelled: the count stays 1
        print(metrics.snapshot)  // ["succeeded": 1, "cancelled": 1]
        // end-sample
        return (store.state.count, metrics.snapshot)
    }
}

@Suite("Docs: middleware")
struct UsingMiddlewareSamples {
    @Test("the maintenance switch cancels, the metrics count both outcomes")
    func middleware() throws {
        let (count, metrics) = try UsingMiddleware.run()
        #expect(count == 1)
        #expect(metrics == ["succeeded": 1, "cancelled": 1])
    }
}
