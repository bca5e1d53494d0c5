import Foundation

/// The central hub: a registry of identifier-keyed stores that routes each action to every store
/// handling its type, in one of four modes, through the registered middleware.
///
/// ```swift
/// let dispatcher = Dispatcher()
/// try dispatcher.register(store: Store<Counter, CounterAction>(identifier: "counter", reducer: CounterReducer()))
/// dispatcher.dispatch(CounterAction.increase)                    // .async
/// dispatcher.dispatch(CounterAction.add(2), mode: .sync)          // returns when done
/// dispatcher.dispatch(CounterAction.increase, mode: .serial) { result in
///     print(result.handledStores)                                 // ["counter"], exactly once
/// }
/// ```
///
/// - Note: Thread-safe: register, unregister and dispatch from any thread, including from inside
///   operations, observers and middleware. Registration changes apply to dispatches made after
///   they return; a dispatch in flight keeps the stores it reached.
public final class Dispatcher: Sendable {
    /// A shared dispatcher for programs that need only one.
    public static let `default` = Dispatcher()

    /// The machinery behind this front: registry, lanes, idleness and shutdown.
    @usableFromInline
    let engine = Engine()

    /// Creates a dispatcher with no stores and no middleware.
    public init() {}

    // MARK: Stores

    /// Registers a store, so that actions of its type reach it.
    ///
    /// - Parameter store: The store; its identifier must be unique in this dispatcher.
    /// - Throws: ``DispatchError`` with code ``DispatchError/Code/duplicateIdentifier`` when a store
    ///   is registered under the same identifier, ``DispatchError/Code/dependencyCycle`` (naming the
    ///   cycle) when its `waitsFor` closes a cycle with the stores registered so far, or
    ///   ``DispatchError/Code/storeRegisteredElsewhere`` when it belongs to another dispatcher, or
    ///   ``DispatchError/Code/shutDown`` after ``shutdown(_:timeout:)``.
    /// - Note: Middleware are told with `didRegister(store:in:)` before this returns. The routes of
    ///   the store's action type are rebuilt on the next dispatch of that type.
    /// - Complexity: Amortized O(1), whatever the number of stores, for a store that neither waits
    ///   for others nor is waited for. Otherwise O(*s* + *e*) to check for a cycle (*s* stores, *e*
    ///   `waitsFor` edges) and O(*t*) to forget the routes of the *t* action types, since any of them
    ///   may pass through the new dependency.
    public func register<State, Action>(store: Store<State, Action>) throws {
        let claim = store.claim(for: ObjectIdentifier(self))
        if claim == .heldElsewhere {
            throw DispatchError.registeredElsewhere(store.identifier)
        }
        let middleware: [any Middleware]
        do {
            middleware = try engine.register(store)
        } catch {
            // A failed second registration leaves the first one's claim in place.
            if claim == .claimed { store.release(from: ObjectIdentifier(self)) }
            throw error
        }
        for middleware in middleware {
            middleware.didRegister(store: store, in: self)
        }
    }

    /// Removes the store registered under `identifier`; the other stores stay registered.
    ///
    /// Transactions already in flight finish with the store; later dispatches no longer reach it.
    /// The store's state streams (``Store/states(bufferingNewest:)``) end.
    ///
    /// - Parameter identifier: The store's identifier.
    /// - Returns: The removed store, or `nil` when no store is registered under `identifier`.
    /// - Complexity: Amortized O(1), whatever the number of stores, for a store that neither waits
    ///   for others nor is waited for; otherwise O(*t*) to forget the routes of the *t* action types.
    @discardableResult
    public func unregister(identifier: String) -> (any AnyStore)? {
        guard let (removed, middleware) = engine.unregister(identifier: identifier) else { return nil }
        removed.release(from: ObjectIdentifier(self))
        removed.endStateStreams()
        for middleware in middleware {
            middleware.didUnregister(store: removed, in: self)
        }
        return removed
    }

    /// The store registered under `identifier`, if any.
    ///
    /// Cast it to its concrete type to use it:
    /// `dispatcher.store(with: "counter") as? Store<Counter, CounterAction>`.
    ///
    /// - Parameter identifier: The store's identifier.
    /// - Returns: The store, or `nil` when none is registered under `identifier`.
    public func store(with identifier: String) -> (any AnyStore)? {
        engine.store(with: identifier)
    }

    /// The registered stores, in registration order.
    public var stores: [any AnyStore] {
        engine.stores
    }

    // MARK: Middleware

    /// Adds a middleware after those already registered; it sees the transactions dispatched from now on.
    ///
    /// - Parameter middleware: The middleware. It is called from several threads; see ``Middleware``.
    public func register(middleware: any Middleware) {
        engine.register(middleware: middleware)
        middleware.didAttach(to: self)
    }

    /// Removes a middleware object registered with ``register(middleware:)``.
    ///
    /// - Parameter middleware: The middleware instance (matched by identity).
    public func unregister(middleware: AnyObject) {
        for removed in engine.unregister(middleware: middleware) {
            removed.didDetach(from: self)
        }
    }

    /// The registered middleware, in registration order.
    public var middleware: [any Middleware] {
        engine.middleware
    }

    // MARK: Dispatching

    /// Dispatches an action to every store that handles its type, or to the one store named `to`.
    ///
    /// Each dispatch is one ``Transaction``. For each store it reaches, the reducer's operation runs
    /// in `mode`, after the operations of the stores it waits for; middleware are called before and
    /// after each. Then `completion` runs exactly once, with which stores handled the action and
    /// whether any was cancelled or failed, after every store's state is committed and its observers
    /// ran. An action that no store handles is reported the same way (``DispatchResult/isUnhandled``),
    /// as are an unknown or mismatched `to` identifier; `dispatch` itself never throws.
    ///
    /// ```swift
    /// dispatcher.dispatch(CounterAction.increase, mode: .serial) { result in
    ///     assert(result.succeeded)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - action: The action.
    ///   - identifier: The identifier of the one store to reach; `nil` (the default) reaches every
    ///     store whose action type is the action's type.
    ///   - mode: Where and when the operations run; ``DispatchMode/async`` by default.
    ///   - timeout: How long the operations may run once started; those still running then are
    ///     cancelled and the result's error is ``DispatchError/Code/timedOut``. `nil`: no limit.
    ///   - completion: Called once when the transaction ends: on the calling thread for `.sync`
    ///     (before `dispatch` returns), on the main queue for `.mainThread`, on a dispatcher queue
    ///     otherwise.
    /// - Returns: The transaction, for its id or to cancel it.
    /// - Note: Safe from any thread. `.sync` is safe on the main thread, inside an operation and inside
    ///   an observer; it reports a re-entrant call made while the same store's state is being updated
    ///   on this thread (``DispatchError/Code/reentrantDispatch``).
    @discardableResult
    @inlinable
    public func dispatch<Action: ActionType>(
        _ action: Action,
        to identifier: String? = nil,
        mode: DispatchMode = .async,
        timeout: Duration? = nil,
        then completion: (@Sendable (DispatchResult) -> Void)? = nil
    ) -> Transaction {
        dispatch(
            action,
            to: identifier,
            mode: mode,
            timeout: timeout,
            startCancelled: false,
            awaited: false,
            then: completion
        )
    }

    /// The generic front of `dispatch` and `perform`.
    ///
    /// Inlined, so that the caller's module specialises this part for `Action`; the rest is not
    /// generic and costs no runtime type lookups.
    @inlinable
    func dispatch<Action: ActionType>(
        _ action: Action,
        to identifier: String?,
        mode: DispatchMode,
        timeout: Duration?,
        startCancelled: Bool,
        awaited: Bool,
        then completion: (@Sendable (DispatchResult) -> Void)?
    ) -> Transaction {
        let dispatched = withUnsafePointer(to: action) { pointer in
            // A zero-sized action has no bytes to read, and its address may be anything, null
            // included: the engine gets a valid one, which a run can keep in an optional.
            let address =
                MemoryLayout<Action>.size == 0
                ? UnsafeRawPointer(bitPattern: MemoryLayout<Action>.alignment).unsafelyUnwrapped
                : UnsafeRawPointer(pointer)
            // Decided here, where the arguments are often constants: most `.sync` calls read nothing back.
            if mode == .sync && identifier == nil && timeout == nil && completion == nil && !startCancelled
                && !awaited
            {
                return engine.dispatchSync(pointer: address, type: Action.self, owner: self)
            }
            return engine.dispatch(
                pointer: address,
                type: Action.self,
                to: identifier,
                mode: mode,
                timeout: timeout,
                startCancelled: startCancelled,
                awaited: awaited,
                owner: self,
                then: completion
            )
        }
        // Built here, where `Action` is known: the action is boxed where the transaction keeps it,
        // not boxed before the call and moved while its bytes are still being stored (S1). An action
        // too large for an existential's inline buffer shares the box of the run that holds it.
        let fitsInline =
            MemoryLayout<Action>.size <= 3 * MemoryLayout<Int>.size
            && MemoryLayout<Action>.alignment <= MemoryLayout<Int>.alignment
        return Transaction(
            id: dispatched.id,
            action: (fitsInline ? nil : dispatched.runAction) ?? action,
            mode: mode,
            targetIdentifier: identifier,
            links: dispatched.links
        )
    }

    // MARK: Waiting

    /// Whether ``shutdown(_:timeout:)`` was called: the dispatcher takes no new actions.
    public var isShutDown: Bool {
        engine.isShutDown
    }

    /// Waits until no `.async`, `.serial` or `.mainThread` transaction is queued or running.
    ///
    /// Called on the main queue, it runs the queued `.mainThread` transactions itself while waiting.
    ///
    /// - Parameter timeout: The longest to wait; `nil` waits as long as it takes.
    /// - Returns: `true` once idle; `false` when the timeout passed first.
    /// - Note: Another thread may dispatch again right after this returns. It blocks the calling
    ///   thread: from async code, use ``waitForIdle(timeout:)``, which suspends instead.
    @available(*, noasync, message: "blocks the thread; use waitForIdle(timeout:) from async code")
    @discardableResult
    public func waitUntilIdle(timeout: Duration? = nil) -> Bool {
        engine.waitUntilIdle(timeout: timeout)
    }
}
