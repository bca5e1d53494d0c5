import Foundation

/// What the engine calls when a store's operation that was still running finishes.
typealias UnitFinishHook = @Sendable (StoreOutcome.Status) -> Void

/// How a store's part of a transaction (a "unit") started.
struct UnitStart {
    /// The operation the reducer returned, if it is one of its own (`nil` for an inline reduction).
    let operation: Operation?
    /// The status when the unit already finished; `nil` while its operation runs (the finish hook
    /// will be called exactly once).
    let status: StoreOutcome.Status?
    /// Whether a change may be queued for the store's observers.
    let needsDelivery: Bool
}

/// A store as the engine sees it, without its generic types.
///
/// The engine is not generic: generic code that is not specialised for the caller's types looks
/// up the metadata of every generic type it mentions at run time, which would cost more than a
/// whole inline dispatch. Only `Store`'s own methods handle the concrete state and action types.
protocol StoreEntry: AnyStore {
    var sequence: UInt64 { get }
    var lock: Lock { get }
    var stateWhileLocked: any StateType { get }
    func replaceStateWhileLocked(_ state: any StateType) -> Bool?
    func deliverPendingChanges()
    func claim(for dispatcher: ObjectIdentifier) -> Bool
    func release(from dispatcher: ObjectIdentifier)
    /// Ends the store's state streams: it was unregistered.
    func endStateStreams()

    /// Asks the reducer for the operation of `action` and starts it on the calling thread.
    ///
    /// The action arrives as a pointer to its value: the route guarantees that its type is the
    /// store's `Action`, and reading it that way costs no dynamic cast.
    ///
    /// - Parameters:
    ///   - action: A pointer to the dispatched action, valid during the call.
    ///   - dependencies: The operations of the stores this one waits for in the transaction (all
    ///     finished); asked for only when the reducer returns an operation of its own.
    ///   - context: The calling thread's context.
    ///   - makeFinishHook: Called at most once, only when the operation does not finish right away.
    /// - Returns: How the unit started, or its status when it already finished.
    func beginUnit(
        _ action: UnsafeRawPointer,
        dependencies: () -> [Operation],
        context: ThreadContext,
        makeFinishHook: () -> UnitFinishHook
    ) -> UnitStart
}

/// The stores an action reaches, in the order their operations start.
final class Route: Sendable {
    /// Keeps the fields below off the cache line of the object's header: the dispatching thread
    /// changes the reference count there while the threads running transactions read the fields.
    private let padding = CacheLinePadding()
    /// The stores, ordered so that every store comes after the ones it waits for.
    let receivers: [any StoreEntry]
    /// For each receiver, the indices of the receivers it waits for, directly or through other
    /// stores' `waitsFor`.
    let dependencies: [[Int]]
    let storeIdentifiers: [String]
    /// Whether some receiver waits for another.
    let hasDependencies: Bool
    /// The first receiver, held directly: a single-store dispatch borrows it from here.
    let first: any StoreEntry

    init(receivers: [any StoreEntry], dependencies: [[Int]]) {
        precondition(!receivers.isEmpty, "DispatchStore: a route reaches at least one store")
        self.first = receivers[0]
        self.receivers = receivers
        self.dependencies = dependencies
        self.storeIdentifiers = receivers.map(\.identifier)
        self.hasDependencies = dependencies.contains { !$0.isEmpty }
    }
}

/// Calls `body` with a pointer to the value inside `action` (valid during the call).
func withUnsafeActionPointer<Result>(
    to action: any ActionType,
    _ body: (UnsafeRawPointer) throws -> Result
) rethrows -> Result {
    func open<Action: ActionType>(_ action: Action) throws -> Result {
        try withUnsafePointer(to: action) { try body(UnsafeRawPointer($0)) }
    }
    return try open(action)
}

/// Forty-eight bytes that push the following stored properties past the 16-byte object header and
/// onto the next 64-byte cache line.
struct CacheLinePadding: Sendable {
    private let words: (Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0)
}
