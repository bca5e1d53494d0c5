public import DispatchStore
public import Testing

extension DispatcherTester {
    /// What a test expects of one step: the state each named store ends with, and the outcomes
    /// that are not a plain success.
    ///
    /// The trailing closure of ``DispatcherTester/send(_:to:mode:isolation:sourceLocation:_:)`` and
    /// ``DispatcherTester/receive(_:isolation:sourceLocation:_:)`` receives one, already holding
    /// every store's state from before the step:
    ///
    /// ```swift
    /// await tester.send(TodoAction.add("milk")) {
    ///     $0.expect(todos) { $0.items = [Todo(title: "milk")] }
    ///     $0.expect(stats) { $0.total = 1 }
    /// }
    /// ```
    ///
    /// - Note: Use it only inside the closure, on the test's task; the tester checks it once the
    ///   step's transaction finished.
    public struct Expectations {
        /// A store's expected state, and where the test expects it.
        struct ExpectedState {
            var state: any StateType
            var location: SourceLocation
        }

        private let dispatcher: Dispatcher
        private let call: String
        private let before: StoreStates
        private(set) var states: [String: ExpectedState] = [:]
        private(set) var unhandled: SourceLocation?
        private(set) var failures: [String: SourceLocation] = [:]
        private(set) var cancellations: [String: SourceLocation] = [:]

        init(dispatcher: Dispatcher, call: String, before: StoreStates) {
            self.dispatcher = dispatcher
            self.call = call
            self.before = before
        }

        /// The identifiers of the stores the expectations name.
        var namedStores: Set<String> {
            Set(states.keys).union(failures.keys).union(cancellations.keys)
        }

        /// Expects `store` to end the step with its state from before the step, changed by `change`.
        ///
        /// `change` mutates a copy of the state the store had before the step; the tester compares
        /// the result with the state committed by the step. When they differ, it records one issue,
        /// here, naming the store and listing each differing field (`items[0].title: expected
        /// "milk", actual "bread"`). An expectation for a store whose state did not change is an
        /// issue too. Calling it again for the same store applies both changes, in order.
        ///
        /// ```swift
        /// $0.expect(counter) { $0.count = 2 }
        /// ```
        ///
        /// - Parameters:
        ///   - store: A store registered with the tester's dispatcher; another store is reported as
        ///     an issue naming it, and the expectation is ignored.
        ///   - sourceLocation: Where to report a mismatch; the caller's location by default.
        ///   - change: Changes the expected state in place.
        /// - Throws: What `change` throws; the tester reports it as an issue of the step.
        /// - Note: States of an `Equatable` type are compared with `==`; others field by field,
        ///   through `Mirror`.
        public mutating func expect<State: StateType, Action: ActionType>(
            _ store: Store<State, Action>,
            sourceLocation: SourceLocation = #_sourceLocation,
            _ change: (inout State) throws -> Void
        ) rethrows {
            guard isRegistered(store, in: "expect", at: sourceLocation) else { return }
            let identifier = store.identifier
            var state = (states[identifier]?.state ?? before[identifier] ?? store.anyState) as? State ?? store.state
            try change(&state)
            states[identifier] = ExpectedState(state: state, location: sourceLocation)
        }

        /// Expects that no store handles the action (no store handles its type, the `to:` store is
        /// unknown or handles another type, or the dispatcher is shut down).
        ///
        /// Without it, an unhandled action is an issue; with it, an action that some store handled is.
        ///
        /// - Parameter sourceLocation: Where to report a handled action; the caller's location by default.
        /// - Note: The state checks still apply: an unhandled action changes no store.
        public mutating func expectUnhandled(sourceLocation: SourceLocation = #_sourceLocation) {
            unhandled = sourceLocation
        }

        /// Expects the operation of `store` to fail (`finish(throwing:)`, or a ``DispatchError`` such
        /// as a re-entrant `.sync` dispatch).
        ///
        /// Without it, a failure is an issue; with it, an operation that finished, was cancelled or
        /// was not reached is.
        ///
        /// - Parameters:
        ///   - store: A store registered with the tester's dispatcher.
        ///   - sourceLocation: Where to report an operation that did not fail; the caller's location
        ///     by default.
        /// - Note: A failing operation may still have changed the state; expect that with
        ///   ``expect(_:sourceLocation:_:)``.
        public mutating func expectFailure(of store: any AnyStore, sourceLocation: SourceLocation = #_sourceLocation) {
            guard isRegistered(store, in: "expectFailure(of:)", at: sourceLocation) else { return }
            failures[store.identifier] = sourceLocation
        }

        /// Expects the operation of `store` to be cancelled or skipped (``Transaction/cancel()``, a
        /// timeout, or a store it waits for that did not finish normally).
        ///
        /// Without it, a cancellation is an issue; with it, an operation that finished, failed or
        /// was not reached is.
        ///
        /// - Parameters:
        ///   - store: A store registered with the tester's dispatcher.
        ///   - sourceLocation: Where to report an operation that was not cancelled; the caller's
        ///     location by default.
        /// - Note: A cancelled operation may still have changed the state before it stopped.
        public mutating func expectCancelled(_ store: any AnyStore, sourceLocation: SourceLocation = #_sourceLocation) {
            guard isRegistered(store, in: "expectCancelled(_:)", at: sourceLocation) else { return }
            cancellations[store.identifier] = sourceLocation
        }

        /// Whether `store` is the store registered under its identifier; records an issue naming
        /// it when not.
        private func isRegistered(_ store: any AnyStore, in method: String, at location: SourceLocation) -> Bool {
            if let registered = dispatcher.store(with: store.identifier), registered === store { return true }
            let known = dispatcher.stores.map { "'\($0.identifier)'" }.joined(separator: ", ")
            let why =
                dispatcher.store(with: store.identifier) == nil
                ? "no store is registered under that identifier"
                : "another store is registered under that identifier"
            Issue.record(
                Comment(
                    rawValue: "\(call): \(method) names store '\(store.identifier)', which is not registered with "
                        + "the tester's dispatcher (\(why); registered: \(known.isEmpty ? "none" : known)); "
                        + "the expectation is ignored"
                ),
                sourceLocation: location
            )
            return false
        }
    }
}
