/// An extension point that sees every action before and after it reaches each store.
///
/// Register one with `Dispatcher.register(middleware:)`. For each transaction and each store it
/// reaches, the dispatcher calls ``willDispatch(transaction:action:in:)`` once, right before the
/// store's operation starts, and ``didDispatch(transaction:action:in:)`` once, after the operation
/// finished, its state was committed and the store's observers were called. Middleware are called
/// in registration order. Once per transaction, including actions no store handles,
/// ``didFinish(_:in:)`` receives the result before the dispatch's completion runs.
///
/// ```swift
/// final class Logger: Middleware {
///     func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
///         print("->", transaction.id, action, store.identifier)
///     }
///     func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore) {
///         print("<-", transaction.id, action, store.identifier)
///     }
/// }
/// dispatcher.register(middleware: Logger())
/// ```
///
/// - Note: Hooks are called on whatever thread runs the transaction, often several at once, and
///   outside every store's lock. A middleware with mutable state must protect it (with a lock or
///   `Mutex`); the dispatcher guarantees only the call order described above for one transaction.
///   Only the first two hooks are required; the others have empty default implementations.
public protocol Middleware: AnyObject, Sendable {
    /// Called once per (transaction, store), right before the store's operation starts.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch; ``Transaction/cancel()`` here cancels it.
    ///   - action: The dispatched action (also `transaction.action`).
    ///   - store: The store about to receive it.
    func willDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore)

    /// Called once per (transaction, store), after the store's operation finished (or was skipped),
    /// its state was committed and its observers ran.
    ///
    /// - Parameters:
    ///   - transaction: The dispatch.
    ///   - action: The dispatched action (also `transaction.action`).
    ///   - store: The store that received it.
    func didDispatch(transaction: Transaction, action: any ActionType, in store: any AnyStore)

    /// Called once per transaction when it ends, before its completion; also for actions that no
    /// store handles (`result.isUnhandled`).
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it.
    func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher)

    /// Called once when the middleware is registered with a dispatcher.
    ///
    /// - Parameter dispatcher: The dispatcher it was registered with.
    func didAttach(to dispatcher: Dispatcher)

    /// Called when the middleware is unregistered from a dispatcher.
    ///
    /// - Parameter dispatcher: The dispatcher it was removed from.
    func didDetach(from dispatcher: Dispatcher)

    /// Called after a store is registered with a dispatcher this middleware is attached to.
    ///
    /// - Parameters:
    ///   - store: The new store.
    ///   - dispatcher: The dispatcher.
    func didRegister(store: any AnyStore, in dispatcher: Dispatcher)

    /// Called after a store is unregistered from a dispatcher this middleware is attached to.
    ///
    /// - Parameters:
    ///   - store: The removed store.
    ///   - dispatcher: The dispatcher.
    func didUnregister(store: any AnyStore, in dispatcher: Dispatcher)
}

extension Middleware {
    /// Does nothing.
    public func didFinish(_ result: DispatchResult, in dispatcher: Dispatcher) {}

    /// Does nothing.
    public func didAttach(to dispatcher: Dispatcher) {}

    /// Does nothing.
    public func didDetach(from dispatcher: Dispatcher) {}

    /// Does nothing.
    public func didRegister(store: any AnyStore, in dispatcher: Dispatcher) {}

    /// Does nothing.
    public func didUnregister(store: any AnyStore, in dispatcher: Dispatcher) {}
}
