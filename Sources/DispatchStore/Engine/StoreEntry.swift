import Foundation

/// A store as the engine sees it, without its generic types.
///
/// The engine is not generic: unspecialised generic code looks up type metadata at run time, which
/// would cost more than a whole inline dispatch. Only `Store`'s methods see its concrete types.
protocol StoreEntry: AnyStore {
    var lockRank: UInt64 { get }
    var stateLock: LockedBox<StoreBookkeeping> { get }
    var stateLocked: any StateType { get }
    var sequenceNumber: UInt64 { get }
    var sequenceNumberLocked: UInt64 { get }
    func replaceStateLocked(_ state: any StateType) -> Bool?
    /// Why the store refuses outside changes, for a caller already holding the store's lock.
    var outsideChangeRefusalLocked: String? { get }
    func deliverPendingChanges()
    func deliverPendingChangesIfFree()
    func claim(for dispatcher: ObjectIdentifier) -> StoreClaim
    func release(from dispatcher: ObjectIdentifier)
    /// Ends the store's state streams: it was unregistered.
    func endStateStreams()
    /// Runs `body` with the bookkeeping under the store's lock; a re-entrant call (from inside the
    /// store's own user code) stops the program with a message naming the store and `what` it tried.
    func withBookkeeping<Result>(for what: String, _ body: (inout StoreBookkeeping) -> Result) -> Result
    /// Whether the calling thread runs this store's user code under its lock (``ThreadContext/holds(_:)``).
    func isHeld(context: ThreadContext) -> Bool
    /// A shortcut to this store, for a route that reaches it alone (``RouteShortcut``).
    func makeShortcut() -> RouteShortcut
    /// The store's handle, for the steps of a route's runs (``StoreHandle``), not retained: the store
    /// keeps it for its whole life.
    var handle: Unmanaged<StoreHandle> { get }
    /// Stops counting `operation`, which a run abandoned, as in flight: its late finish commits nothing.
    func abandon(_ operation: Operation)

    /// Asks the reducer for the operation of the action at `action` and starts it on this thread.
    ///
    /// The action's type is the store's `Action` (the route guarantees it), read through the pointer
    /// without a dynamic cast. `prepared`: the operation the reducer returned already, if it was asked
    /// (``TransactionRun/PreparedStep``). `dependencies`: the operations of the stores this one waits for.
    /// `makeFinishHook` is called at most once, only when the operation does not finish at once.
    func beginStep(
        _ action: UnsafeRawPointer,
        prepared: Operation?,
        dependencies: [Operation]?,
        context: ThreadContext,
        makeFinishHook: () -> StepStart.FinishHook
    ) -> StepStart
}
