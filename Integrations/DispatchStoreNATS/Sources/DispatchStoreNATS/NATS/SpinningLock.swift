#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex that spins briefly before it sleeps, for the replication's short critical sections that
/// several threads take per message (the applier's table of waiting performs, the publisher's
/// outbox).
///
/// With a plain mutex, every collision sent a thread to sleep in the kernel and woke it again, a
/// context switch costing more than the few dozen instructions the lock guards; on glibc this is
/// an adaptive mutex, which spins first (elsewhere the platform's default mutex). It is not
/// generic and not `DispatchStore.Locked` on purpose: `Locked.withLock` is generic across a module
/// boundary, so each call with a tuple or optional result looks its type's metadata up at run time.
final class SpinningLock: @unchecked Sendable {
    // @unchecked: the mutex is only used through pthread calls, which are thread-safe.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if canImport(Glibc)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        let status = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(status == 0, "pthread_mutex_init failed with error \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
