/// A misuse or failure the dispatcher reports, with a code to match on and a message naming what is involved.
///
/// Thrown by `Dispatcher.register(store:)`, and carried in `DispatchResult.error` for problems found
/// while dispatching (which never throws). Match on ``code``:
///
/// ```swift
/// do {
///     try dispatcher.register(store: store)
/// } catch let error as DispatchError where error.code == .duplicateIdentifier {
///     print(error)  // A store with the identifier 'counter' is already registered; ...
/// }
/// ```
///
/// The description is the message alone, a sentence for a person; code that reacts to the error
/// reads ``code``, and `String(reflecting: error)` shows both.
public struct DispatchError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of problem.
    public struct Code: Hashable, Sendable, CustomStringConvertible, ErrorCode {
        package let name: String

        /// A store with the same identifier is already registered.
        public static let duplicateIdentifier = Code(name: "duplicateIdentifier")
        /// The store's `waitsFor` closes a cycle in the declared dependency graph.
        public static let dependencyCycle = Code(name: "dependencyCycle")
        /// The store is already registered with another dispatcher.
        public static let storeRegisteredElsewhere = Code(name: "storeRegisteredElsewhere")
        /// No store is registered under the identifier given to `dispatch(_:to:)`.
        public static let unknownStore = Code(name: "unknownStore")
        /// The store named in `dispatch(_:to:)` handles another action type.
        public static let actionTypeMismatch = Code(name: "actionTypeMismatch")
        /// No registered store handles the action's type.
        public static let unhandledAction = Code(name: "unhandledAction")
        /// A `.sync` dispatch reached a store whose state the same thread is already updating.
        public static let reentrantDispatch = Code(name: "reentrantDispatch")
        /// A reducer returned an operation that had already been started.
        public static let operationReused = Code(name: "operationReused")
        /// The operations did not finish within the timeout the caller gave.
        public static let timedOut = Code(name: "timedOut")
        /// The dispatcher was shut down and takes no new actions.
        public static let shutDown = Code(name: "shutDown")
        /// `RecorderMiddleware.jump(to:)` was given a position outside its history.
        public static let historyPositionOutOfRange = Code(name: "historyPositionOutOfRange")
        /// The recorder is not registered with a dispatcher, so it has nothing to restore into.
        public static let recorderDetached = Code(name: "recorderDetached")
        /// A restore was asked for from inside a store's `updateState` or `reduce`.
        public static let reentrantRestore = Code(name: "reentrantRestore")
        /// `RecorderMiddleware(validatingLimit:)` was given a history limit below 1.
        public static let invalidHistoryLimit = Code(name: "invalidHistoryLimit")
        /// A change that no action makes (a recorder's restore) reached a store that refuses such
        /// changes (as a replicated store does).
        public static let outsideChangeRefused = Code(name: "outsideChangeRefused")
    }

    /// The kind of problem.
    public let code: Code
    /// A sentence that names the store, action or cycle involved and says what to do.
    public let message: String
    /// The identifier of the store involved, if one is.
    public let storeIdentifier: String?
    /// For ``Code/dependencyCycle``: the identifiers along the cycle, first and last the same.
    public let cycle: [String]

    /// Creates an error; the library creates these, tests and middleware may too.
    ///
    /// - Parameters:
    ///   - code: The kind of problem.
    ///   - message: A sentence that names what is involved.
    ///   - storeIdentifier: The identifier of the store involved, if any.
    ///   - cycle: The identifiers along a dependency cycle, if any.
    public init(_ code: Code, _ message: String, storeIdentifier: String? = nil, cycle: [String] = []) {
        self.code = code
        self.message = message
        self.storeIdentifier = storeIdentifier
        self.cycle = cycle
    }

    /// The message: a sentence naming the store, action, position or cycle involved.
    ///
    /// For example `A store with the identifier 'counter' is already registered; unregister it first
    /// or pick another identifier.` It does not start with the code: match on ``code`` in code.
    public var description: String {
        message
    }

    /// The code and the message, for logs read by developers: `DispatchError(duplicateIdentifier): A store ...`.
    public var debugDescription: String {
        "DispatchError(\(code)): \(message)"
    }
}

extension DispatchError {
    static func duplicateIdentifier(_ identifier: String) -> DispatchError {
        DispatchError(
            .duplicateIdentifier,
            "A store with the identifier '\(identifier)' is already registered; unregister it first or pick another "
                + "identifier.",
            storeIdentifier: identifier
        )
    }

    static func dependencyCycle(_ cycle: [String]) -> DispatchError {
        DispatchError(
            .dependencyCycle,
            "Store '\(cycle[0])' cannot be registered: its waitsFor closes the cycle "
                + "\(cycle.joined(separator: " -> ")).",
            storeIdentifier: cycle[0],
            cycle: cycle
        )
    }

    static func registeredElsewhere(_ identifier: String) -> DispatchError {
        DispatchError(
            .storeRegisteredElsewhere,
            "Store '\(identifier)' is already registered with another dispatcher; unregister it there first.",
            storeIdentifier: identifier
        )
    }

    static func unknownStore(_ identifier: String, action: String) -> DispatchError {
        DispatchError(
            .unknownStore,
            "No store is registered under the identifier '\(identifier)', so the action \(action) reached no store.",
            storeIdentifier: identifier
        )
    }

    static func actionTypeMismatch(_ identifier: String, expected: String, action: String) -> DispatchError {
        DispatchError(
            .actionTypeMismatch,
            "Store '\(identifier)' handles \(expected), not the dispatched action \(action).",
            storeIdentifier: identifier
        )
    }

    static func unhandled(action: String, type: String) -> DispatchError {
        DispatchError(
            .unhandledAction,
            "No registered store handles \(type), so the action \(action) reached no store."
        )
    }

    static func reentrant(_ identifier: String) -> DispatchError {
        DispatchError(
            .reentrantDispatch,
            "Store '\(identifier)' was reached by a .sync dispatch made while this thread is updating its state "
                + "(inside updateState or reduce); dispatch with .async or .serial from there instead.",
            storeIdentifier: identifier
        )
    }

    static func operationReused(_ identifier: String) -> DispatchError {
        DispatchError(
            .operationReused,
            "The reducer of store '\(identifier)' returned an operation that was already started; "
                + "return a new ActionOperation for every call.",
            storeIdentifier: identifier
        )
    }

    static func shutDown(action: String) -> DispatchError {
        DispatchError(
            .shutDown,
            "The dispatcher was shut down and takes no new actions, so the action \(action) was not dispatched."
        )
    }

    static func abandonedByShutdown(_ identifiers: [String]) -> DispatchError {
        DispatchError(
            .timedOut,
            "The shutdown's time limit passed while the operations of \(stores(identifiers)) were still running; "
                + "they were cancelled and the transaction ended without waiting for them.",
            storeIdentifier: identifiers.first
        )
    }

    static func registeredAfterShutdown(_ identifier: String) -> DispatchError {
        DispatchError(
            .shutDown,
            "Store '\(identifier)' cannot be registered: the dispatcher was shut down and takes no new stores.",
            storeIdentifier: identifier
        )
    }

    /// The error of `RecorderMiddleware(validatingLimit:)` for a limit below 1.
    ///
    /// - Parameter limit: The limit it was given, which the message names.
    /// - Returns: An error with code ``Code/invalidHistoryLimit``.
    static func invalidHistoryLimit(_ limit: Int) -> DispatchError {
        DispatchError(
            .invalidHistoryLimit,
            "The history limit \(limit) is below 1: a recorder always keeps entry 0, the states when it is "
                + "registered, so pass a limit of 1 or more, such as 500."
        )
    }

    static func timedOut(_ identifiers: [String], after timeout: Duration) -> DispatchError {
        DispatchError(
            .timedOut,
            "The operations of \(stores(identifiers)) did not finish within \(timeout); they were cancelled.",
            storeIdentifier: identifiers.first
        )
    }

    /// `store 'a'`, or `stores 'a', 'b'`.
    private static func stores(_ identifiers: [String]) -> String {
        let quoted = identifiers.map { "'\($0)'" }.joined(separator: ", ")
        return identifiers.count == 1 ? "store \(quoted)" : "stores \(quoted)"
    }
}
