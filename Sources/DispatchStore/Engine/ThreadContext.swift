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
/// Only the owning thread reads or writes an instance, so it needs no lock. It is reached through a
/// pthread key (a few nanoseconds) rather than `Thread.current.threadDictionary`.
final class ThreadContext {
    /// What happened when the default `Reducer.operation(for:in:)` ran inline.
    enum InlineResult {
        /// Nothing ran inline.
        case none
        /// `reduce(_:into:)` ran under the store's lock; `notified` tells whether a notification was queued.
        case reduced(notified: Bool)
        /// The store's lock is already held by this thread: the dispatch is re-entrant.
        case reentrant
    }

    /// The store whose reducer the dispatcher is asking for an operation on this thread, if any.
    var inlineStore: ObjectIdentifier?
    /// Set by the default `Reducer.operation(for:in:)` when it ran inline for `inlineStore`.
    var inlineResult = InlineResult.none
    /// How many observer deliveries this thread is inside (observers may dispatch and deliver again).
    var deliveryDepth = 0
    /// Whether this is the process's main thread (computed once; `Thread.isMainThread` is slow on Linux).
    let isMainThread: Bool

    private init() {
        isMainThread = Thread.isMainThread
    }

    /// The calling thread's context, created on first use and released when the thread exits.
    static var current: ThreadContext {
        if let raw = pthread_getspecific(threadContextKey) {
            return Unmanaged<ThreadContext>.fromOpaque(raw).takeUnretainedValue()
        }
        let context = ThreadContext()
        pthread_setspecific(threadContextKey, Unmanaged.passRetained(context).toOpaque())
        return context
    }
}

#if canImport(Darwin)
private func releaseThreadContext(_ raw: UnsafeMutableRawPointer) {
    Unmanaged<ThreadContext>.fromOpaque(raw).release()
}
#else
private func releaseThreadContext(_ raw: UnsafeMutableRawPointer?) {
    if let raw { Unmanaged<ThreadContext>.fromOpaque(raw).release() }
}
#endif

private let threadContextKey: pthread_key_t = {
    var key = pthread_key_t()
    let status = pthread_key_create(&key, releaseThreadContext)
    precondition(status == 0, "pthread_key_create failed with error \(status)")
    return key
}()
