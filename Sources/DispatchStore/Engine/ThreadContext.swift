import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Per-thread scratch state the dispatcher uses on its hot paths.
///
/// A plain struct behind a pthread key, reached in a few nanoseconds without reference counting
/// (`Thread.current.threadDictionary` costs far more). Only the owning thread reads or writes it.
struct ThreadContext {
    /// What happened when the default `Reducer.operation(for:in:)` ran inline.
    enum InlineResult {
        /// Nothing ran inline.
        case none
        /// `reduce(_:into:)` ran under the store's lock; `notified` tells whether a change was queued.
        case reduced(notified: Bool)
        /// The store's lock is already held by this thread: the dispatch is re-entrant.
        case reentrant
    }

    struct State {
        var inlineStore: ObjectIdentifier?
        var inlineResult = InlineResult.none
        var deliveryDepth = 0
        /// The sequence number the store gave the action of the step this thread started last.
        ///
        /// 0 when the store did not apply it.
        /// Kept here rather than returned with the step, which would no longer fit in registers (S1).
        var appliedSequenceNumber: UInt64 = 0
        let isMainThread: Bool
    }

    private let state: UnsafeMutablePointer<State>

    /// The calling thread's context, created on first use and freed when the thread exits.
    static var current: ThreadContext {
        current(key: Key.shared)
    }

    /// The calling thread's context, reached through a copy of the shared key (`Key.shared` is a
    /// lazily initialised global, which costs a check on every access).
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

    /// The store whose reducer the dispatcher is asking for an operation on this thread, if any.
    var inlineStore: ObjectIdentifier? {
        get { state.pointee.inlineStore }
        nonmutating set { state.pointee.inlineStore = newValue }
    }

    /// Set by the default `Reducer.operation(for:in:)` when it ran inline for `inlineStore`.
    var inlineResult: InlineResult {
        get { state.pointee.inlineResult }
        nonmutating set { state.pointee.inlineResult = newValue }
    }

    /// The sequence number the store gave the action of the step `beginStep` started last on this
    /// thread; 0 when it did not apply it (yet).
    var appliedSequenceNumber: UInt64 {
        get { state.pointee.appliedSequenceNumber }
        nonmutating set { state.pointee.appliedSequenceNumber = newValue }
    }

    /// How many observer deliveries this thread is inside (observers may dispatch and deliver again).
    var deliveryDepth: Int {
        get { state.pointee.deliveryDepth }
        nonmutating set { state.pointee.deliveryDepth = newValue }
    }

    /// Whether this is the process's main thread (computed once; `Thread.isMainThread` is slow on Linux).
    var isMainThread: Bool {
        state.pointee.isMainThread
    }
}

#if canImport(Darwin)
private func releaseThreadContext(_ raw: UnsafeMutableRawPointer) {
    let state = raw.assumingMemoryBound(to: ThreadContext.State.self)
    state.deinitialize(count: 1)
    state.deallocate()
}
#else
private func releaseThreadContext(_ raw: UnsafeMutableRawPointer?) {
    guard let state = raw?.assumingMemoryBound(to: ThreadContext.State.self) else { return }
    state.deinitialize(count: 1)
    state.deallocate()
}
#endif

private let threadContextKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key, releaseThreadContext)
    precondition(status == 0, "pthread_key_create failed with error \(status)")
    return key
}()
