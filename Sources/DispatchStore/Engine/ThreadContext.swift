import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Per-thread scratch state for the hot paths: a plain struct behind a pthread key, reached in a
/// few nanoseconds without reference counting; only its thread touches it.
@dynamicMemberLookup
struct ThreadContext {
    /// The fields, read and written through the context as its own (`context.deliveryDepth`).
    struct State {
        /// How many observer deliveries this thread is inside (observers may dispatch again).
        var deliveryDepth = 0
        /// The sequence number the store gave the action in the step `beginStep` started last here
        /// (0: not applied); returned with the step, it would no longer fit in registers (S1).
        var appliedSequenceNumber: UInt64 = 0
        /// Whether this is the main thread (computed once; `Thread.isMainThread` is slow on Linux).
        let isMainThread: Bool
        /// How many `.sync` dispatches this thread is inside.
        var syncDepth = 0
        /// The runs kept for `.sync` dispatches, one per nesting level up to ``syncRunLevels``; `nil`: none or in use.
        let syncRuns: UnsafeMutablePointer<TransactionRun?> = {
            let runs = UnsafeMutablePointer<TransactionRun?>.allocate(capacity: ThreadContext.syncRunLevels)
            runs.initialize(repeating: nil, count: ThreadContext.syncRunLevels)
            return runs
        }()
        /// The next transaction id of the block this thread reserved, and the block's end: ids are
        /// unique in the process and increase on each thread, without a shared lock per dispatch.
        var nextTransactionID: UInt64 = 0
        var transactionIDLimit: UInt64 = 0
        /// The stores whose lock this thread holds while it runs their user code (`reduce(_:into:)`, an
        /// `updateState` closure), outermost first: taking one of those locks again would deadlock.
        var heldStores = UnsafeMutablePointer<ObjectIdentifier>.allocate(capacity: 4)
        var heldCount = 0
        var heldCapacity = 4
        /// What a dispatch through a shortcut hands over besides its ``RouteShortcut/Passage``, rarely.
        var leftOver = LeftOver()
        /// The shortcuts this thread remembers, each in the slot its engine and action type pick.
        let shortcuts: UnsafeMutablePointer<RememberedShortcut> = {
            let slots = UnsafeMutablePointer<RememberedShortcut>.allocate(capacity: ThreadContext.shortcutSlots)
            slots.initialize(repeating: RememberedShortcut(), count: ThreadContext.shortcutSlots)
            return slots
        }()
    }

    /// The objects a dispatch through a shortcut hands to the engine when it does not simply reduce.
    struct LeftOver {
        /// The store, when the dispatch was the last to leave a shortcut retired meanwhile.
        var released: AnyObject?
        /// The operation the reducer returned.
        var prepared: TransactionRun.PreparedStep?
    }

    /// Takes what the last dispatch through a shortcut left over.
    func takeLeftOver() -> LeftOver {
        defer { state.pointee.leftOver = LeftOver() }
        return state.pointee.leftOver
    }

    /// Leaves `released` and `prepared` for the engine (``takeLeftOver()``).
    func leave(released: AnyObject?, prepared: TransactionRun.PreparedStep? = nil) {
        state.pointee.leftOver = LeftOver(released: released, prepared: prepared)
    }

    /// A shortcut and what it was remembered for: an engine and an action type.
    struct RememberedShortcut {
        var engine: ObjectIdentifier?
        var type: ObjectIdentifier?
        var shortcut: RouteShortcut?
    }

    /// How many shortcuts a thread remembers (a power of two).
    static let shortcutSlots = 8

    /// How many levels of nested `.sync` dispatches keep a run for the next dispatch.
    static let syncRunLevels = 4

    private let state: UnsafeMutablePointer<State>

    /// The calling thread's context, created on first use and freed when the thread exits.
    static var current: ThreadContext { current(key: Key.shared) }

    /// The calling thread's context, through a copy of the key (`Key.shared` is a lazy global).
    @inline(__always)
    static func current(key: Key) -> ThreadContext {
        if let raw = pthread_getspecific(key.value) {
            return ThreadContext(state: raw.assumingMemoryBound(to: State.self))
        }
        let state = UnsafeMutablePointer<State>.allocate(capacity: 1)
        state.initialize(to: State(isMainThread: Thread.isMainThread))
        pthread_setspecific(key.value, state)
        return ThreadContext(state: state)
    }

    /// The pthread key under which each thread's context is kept.
    struct Key: Sendable {
        let value: pthread_key_t
        static let shared = Key(value: threadContextKey)
    }

    /// A field of the calling thread's ``State``, in place.
    subscript<Value>(dynamicMember field: WritableKeyPath<State, Value>) -> Value {
        @inline(__always) get { state.pointee[keyPath: field] }
        @inline(__always) nonmutating set { state.pointee[keyPath: field] = newValue }
    }

    /// Takes the run kept for a `.sync` dispatch at this nesting level, or a new one; pair with ``giveBackSyncRun(_:)``.
    @inline(__always)
    func takeSyncRun() -> TransactionRun {
        let level = state.pointee.syncDepth
        state.pointee.syncDepth = level &+ 1
        // Moved out of its slot, which is left empty: no retain and release (S1).
        if level < Self.syncRunLevels, let run = state.pointee.syncRuns[level].take() { return run }
        return TransactionRun.make(lane: nil)
    }

    /// Ends a `.sync` dispatch's use of its run, keeping `run` (cleared, or `nil`) for the next one at this level.
    @inline(__always)
    func giveBackSyncRun(_ run: consuming TransactionRun?) {
        let level = state.pointee.syncDepth &- 1
        state.pointee.syncDepth = level
        // The slot is empty since `takeSyncRun()`: initialized, not assigned (no release of `nil`).
        if level < Self.syncRunLevels { (state.pointee.syncRuns + level).initialize(to: consume run) }
    }

    /// Whether this thread runs user code under `store`'s lock (``beginHolding(_:)``).
    @inline(__always)
    func holds(_ store: ObjectIdentifier) -> Bool {
        var index = 0
        while index < state.pointee.heldCount {
            if state.pointee.heldStores[index] == store { return true }
            index &+= 1
        }
        return false
    }

    /// Marks the start of user code run under `store`'s lock, which the caller holds: until
    /// ``endHolding()``, ``holds(_:)`` tells, so that taking that lock again is reported rather than
    /// a deadlock.
    @inline(__always)
    func beginHolding(_ store: ObjectIdentifier) {
        if _slowPath(state.pointee.heldCount == state.pointee.heldCapacity) { growHeldStores() }
        state.pointee.heldStores[state.pointee.heldCount] = store
        state.pointee.heldCount &+= 1
    }

    /// Marks the end of the user code of the last ``beginHolding(_:)``.
    @inline(__always)
    func endHolding() {
        state.pointee.heldCount &-= 1
    }

    /// Doubles the room for held stores (user code of one store updating another, and so on).
    @inline(never)
    private func growHeldStores() {
        let capacity = state.pointee.heldCapacity * 2
        let grown = UnsafeMutablePointer<ObjectIdentifier>.allocate(capacity: capacity)
        grown.moveInitialize(from: state.pointee.heldStores, count: state.pointee.heldCount)
        state.pointee.heldStores.deallocate()
        state.pointee.heldStores = grown
        state.pointee.heldCapacity = capacity
    }

    /// A new transaction id, from this thread's block (a new block every 4,096).
    @inline(__always)
    func takeTransactionID() -> UInt64 {
        if _slowPath(state.pointee.nextTransactionID == state.pointee.transactionIDLimit) {
            (state.pointee.nextTransactionID, state.pointee.transactionIDLimit) = reserveTransactionIDBlock()
        }
        defer { state.pointee.nextTransactionID &+= 1 }
        return state.pointee.nextTransactionID
    }

    /// The slot of the shortcut for actions of `type` on `engine`.
    @inline(__always)
    private func shortcutSlot(
        engine: ObjectIdentifier,
        type: ObjectIdentifier
    ) -> UnsafeMutablePointer<RememberedShortcut> {
        // Bits of the addresses, above the lowest, always zero (metadata and objects are aligned).
        let bits = UInt(bitPattern: type) >> 4 ^ UInt(bitPattern: engine) >> 6
        return state.pointee.shortcuts + Int(bits & UInt(Self.shortcutSlots - 1))
    }

    /// The shortcut this thread remembers for actions of `type` on `engine`, not retained; `nil` if none.
    @inline(__always)
    func shortcut(engine: ObjectIdentifier, type: ObjectIdentifier) -> Unmanaged<RouteShortcut>? {
        let slot = shortcutSlot(engine: engine, type: type)
        guard slot.pointee.engine == engine && slot.pointee.type == type else { return nil }
        // Read as an unmanaged reference: no retain and release (S1).
        let offset = MemoryLayout<RememberedShortcut>.offset(of: \.shortcut).unsafelyUnwrapped
        return UnsafeRawPointer(slot).load(fromByteOffset: offset, as: Unmanaged<RouteShortcut>?.self)
    }

    /// Remembers `shortcut` for actions of `type` on `engine`, in place of what its slot held.
    func remember(_ shortcut: RouteShortcut, engine: ObjectIdentifier, type: ObjectIdentifier) {
        shortcutSlot(engine: engine, type: type).pointee = RememberedShortcut(
            engine: engine,
            type: type,
            shortcut: shortcut
        )
    }

    /// Forgets the shortcut for actions of `type` on `engine` (it was retired).
    func forgetShortcut(engine: ObjectIdentifier, type: ObjectIdentifier) {
        let slot = shortcutSlot(engine: engine, type: type)
        if slot.pointee.engine == engine && slot.pointee.type == type { slot.pointee = RememberedShortcut() }
    }

    /// A constant field of the calling thread's ``State``.
    subscript<Value>(dynamicMember field: KeyPath<State, Value>) -> Value {
        @inline(__always) get { state.pointee[keyPath: field] }
    }
}

private let threadContextKey: pthread_key_t = {
    var key = pthread_key_t()
    // Frees a thread's context when it exits; `raw` is optional on Linux only, hence the coercion.
    let status = pthread_key_create(&key) { raw in
        guard let state = (raw as UnsafeMutableRawPointer?)?.assumingMemoryBound(to: ThreadContext.State.self) else {
            return
        }
        state.pointee.syncRuns.deinitialize(count: ThreadContext.syncRunLevels)
        state.pointee.syncRuns.deallocate()
        state.pointee.shortcuts.deinitialize(count: ThreadContext.shortcutSlots)
        state.pointee.shortcuts.deallocate()
        state.pointee.heldStores.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }
    precondition(status == 0, "pthread_key_create failed with error \(status)")
    return key
}()
