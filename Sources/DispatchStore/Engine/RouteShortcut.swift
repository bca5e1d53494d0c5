/// The route of an action type that one store handles, as threads remember it for the `.sync`
/// dispatches nobody reads (no middleware, no completion): such a dispatch skips the engine's lock,
/// the transaction run and its machine.
///
/// The shortcut is guarded by its store's lock. A dispatch takes that lock to check that the route
/// still stands and to enter the shortcut, which keeps the store alive without reference counting;
/// it asks the reducer outside the lock, then takes the lock again to reduce and leave. The
/// registry retires a shortcut that threads may remember, under the same lock, when it drops its
/// route (a registration changed it, a middleware was added, a shutdown began, the engine went
/// away); a dispatch that finds it retired takes the engine's path, and its thread forgets it.
///
/// Not generic, so that the engine calls it without type metadata; ``TypedRouteShortcut`` reaches
/// the store with its types.
class RouteShortcut: @unchecked Sendable {
    // @unchecked: `isRemembered` is touched only under the engine's lock; `isRetired`, `entered`
    // and `pin` only under the store's lock (`lock`); the rest is immutable.

    /// The store's lock, retained: a thread may still check a retired shortcut after the store is gone.
    let lock: LockStorage<StoreBookkeeping>
    /// The store's identifier, for the transactions the dispatches return.
    let storeIdentifier: String
    /// The store's identity, to tell whether this thread holds its lock.
    let store: ObjectIdentifier
    /// Whether a thread may remember the shortcut, so that dropping its route retires it.
    var isRemembered = false
    private var isRetired = false
    /// How many dispatches entered the shortcut and have not left it.
    private var entered = 0
    /// The store, until the shortcut is retired and no dispatch is inside.
    private var pin: AnyObject?

    /// A shortcut to `store`, the one store of a route.
    init(store: any StoreEntry) {
        self.lock = store.stateLock.storage
        self.storeIdentifier = store.identifier
        self.store = ObjectIdentifier(store)
        self.pin = store
    }

    /// Dispatches the action at `action` `.sync` to the store; see ``TypedRouteShortcut``.
    func dispatch(_ action: UnsafeRawPointer, context: ThreadContext) -> Passage {
        preconditionFailure("DispatchStore: a RouteShortcut without a store's types was used")
    }

    /// Enters the shortcut for one dispatch unless it was retired, or this thread runs the store's
    /// user code under its lock; touches only the shortcut and the lock, never the store, which may
    /// be gone once the shortcut is retired.
    ///
    /// - Returns: `nil` once entered (the store stays alive until the dispatch leaves), otherwise why not.
    @inline(__always)
    final func enter(context: ThreadContext) -> Passage? {
        if context.holds(store) { return .reentrant }
        lock.lock()
        if isRetired {
            lock.unlock()
            return .retired
        }
        entered &+= 1
        lock.unlock()
        return nil
    }

    /// Leaves the shortcut entered by ``enter(context:)``; call holding the store's lock.
    ///
    /// - Returns: The store's last reference held here, when the shortcut was retired meanwhile and
    ///   this was the last dispatch inside: release it after unlocking (it may free the store).
    @inline(__always)
    final func leaveLocked() -> AnyObject? {
        entered &-= 1
        return isRetired && entered == 0 ? pin.take() : nil
    }

    /// Retires the shortcut, so that dispatches take the engine's path; call holding no engine lock.
    ///
    /// Takes the store's lock, unless this thread runs the store's user code under it already (a
    /// registration from inside its `reduce(_:into:)`). The store is released here when no
    /// dispatch is inside.
    final func retire() {
        let held = ThreadContext.current.holds(store)
        if !held { lock.lock() }
        isRetired = true
        let released = entered == 0 ? pin.take() : nil
        if !held { lock.unlock() }
        withExtendedLifetime(released) {}
    }
}

extension RouteShortcut {
    /// How a dispatch through a shortcut went; each case but `reduced` sends it the engine's way.
    ///
    /// A plain value, returned in a register: the few cases that hand over an object leave it in the
    /// thread's context (``ThreadContext/State/leftOver``), so the common one has nothing to release.
    enum Passage {
        /// The store applied the action with `reduce(_:into:)`.
        case reduced
        /// The same, and the shortcut, retired meanwhile, let go of the store: the context's
        /// `leftOver.released` holds it, to release once the store's code returned (it may free it).
        case reducedReleasing
        /// The route no longer stands: the thread forgets the shortcut; the reducer was not asked.
        case retired
        /// This thread runs the store's user code under its lock (a `.sync` dispatch from inside its
        /// own `reduce(_:into:)` or `updateState`): the engine's path reports it. Not asked either.
        case reentrant
        /// The reducer returned an operation, in the context's `leftOver.prepared`, which the engine's
        /// path starts (and `leftOver.released`, possibly the store to release).
        case operation
    }
}
