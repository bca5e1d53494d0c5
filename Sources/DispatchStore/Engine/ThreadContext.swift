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
    }

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
        state.deinitialize(count: 1)
        state.deallocate()
    }
    precondition(status == 0, "pthread_key_create failed with error \(status)")
    return key
}()
