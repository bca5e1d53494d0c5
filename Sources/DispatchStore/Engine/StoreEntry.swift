import Foundation

/// What the engine calls when a store's operation that was still running finishes.
typealias UnitFinishHook = @Sendable (StoreOutcome.Status) -> Void

/// How a store's part of a transaction (a "unit") started.
struct UnitStart {
    /// The operation the reducer returned, if any (the placeholder for an inline reduction).
    let operation: Operation?
    /// The status when the unit already finished; `nil` while its operation runs (the finish hook
    /// will be called exactly once).
    let status: StoreOutcome.Status?
    /// Whether a change may be queued for the store's observers.
    let needsDelivery: Bool
}

/// A store as the engine sees it, without its generic types.
protocol StoreEntry: AnyStore {
    var sequence: UInt64 { get }
    var lock: Lock { get }
    var stateWhileLocked: any StateType { get }
    func replaceStateWhileLocked(_ state: any StateType) -> Bool?
    func deliverPendingChanges()
    func claim(for dispatcher: ObjectIdentifier) -> Bool
    func release(from dispatcher: ObjectIdentifier)
    /// Builds the route of this store's action type over `members` (which all handle it).
    func makeRoute(_ members: [any StoreEntry], dependencies: [[Int]]) -> any AnyRoute
    /// A route reaching only this store.
    func makeSingleRoute() -> any AnyRoute
}

/// A store that handles actions of type `Action`.
protocol ActionReceiver<Action>: StoreEntry {
    associatedtype Action: ActionType

    /// Asks the reducer for the operation of `action` and starts it on the calling thread.
    ///
    /// - Parameters:
    ///   - action: The dispatched action.
    ///   - dependencies: Operations of stores this one waits for in the transaction (all finished).
    ///   - context: The calling thread's context.
    ///   - makeFinishHook: Called at most once, only when the operation does not finish right away.
    /// - Returns: How the unit started, or its status when it already finished.
    func beginUnit(
        _ action: Action,
        dependencies: [Operation],
        context: ThreadContext,
        makeFinishHook: () -> UnitFinishHook
    ) -> UnitStart
}

extension Store: ActionReceiver {
    func makeRoute(_ members: [any StoreEntry], dependencies: [[Int]]) -> any AnyRoute {
        let receivers = members.map { member -> any ActionReceiver<Action> in
            guard let receiver = member as? any ActionReceiver<Action> else {
                preconditionFailure("DispatchStore: route for \(Action.self) given store '\(member.identifier)'")
            }
            return receiver
        }
        return Route(receivers: receivers, dependencies: dependencies)
    }

    func makeSingleRoute() -> any AnyRoute {
        Route<Action>(receivers: [self], dependencies: [[]])
    }
}

/// The stores an action reaches, in the order their operations start.
protocol AnyRoute: AnyObject, Sendable {
    var storeIdentifiers: [String] { get }
}

final class Route<Action: ActionType>: AnyRoute {
    /// The stores, ordered so that every store comes after the ones it waits for.
    let receivers: [any ActionReceiver<Action>]
    /// For each receiver, the indices of the receivers it waits for, directly or through other
    /// stores' `waitsFor`.
    let dependencies: [[Int]]
    let storeIdentifiers: [String]

    init(receivers: [any ActionReceiver<Action>], dependencies: [[Int]]) {
        self.receivers = receivers
        self.dependencies = dependencies
        self.storeIdentifiers = receivers.map(\.identifier)
    }
}
