#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutual-exclusion lock over a heap-allocated pthread mutex.
///
/// The mutex lives at a stable address for its whole life, as POSIX requires. Three kinds:
/// - `.normal`: the cheapest.
/// - `.errorChecking`: a second `lock()` by the owning thread is reported instead of deadlocking,
///   which is how the library turns re-entrant access to a store into a clear error.
/// - `.recursive`: the owning thread may lock again (observer delivery uses it).
final class Lock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronisation primitive; its storage is never reassigned.
    enum Kind {
        case normal
        case errorChecking
        case recursive
    }

    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init(_ kind: Kind = .normal) {
        // A cache line of its own: a mutex that shares one with other data written by another
        // thread would bounce between cores.
        mutex = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 64)
            .bindMemory(to: pthread_mutex_t.self, capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        switch kind {
        case .normal:
            #if canImport(Glibc)
            // Spins briefly before sleeping: the critical sections are a few dozen instructions,
            // and a futex sleep and wake-up would cost far more.
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
            #endif
        case .errorChecking:
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        case .recursive:
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        }
        let status = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(status == 0, "pthread_mutex_init failed with error \(status)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        UnsafeMutableRawPointer(mutex).deallocate()
    }

    /// Acquires the lock, blocking while another thread holds it.
    func lock() {
        let status = pthread_mutex_lock(mutex)
        precondition(status == 0, "pthread_mutex_lock failed with error \(status)")
    }

    /// Acquires the lock unless the calling thread already holds it.
    ///
    /// - Returns: `false`, without locking, when the calling thread is the owner (only an
    ///   `.errorChecking` lock can tell); `true` once the lock is held.
    func lockUnlessOwned() -> Bool {
        let status = pthread_mutex_lock(mutex)
        if status == EDEADLK { return false }
        precondition(status == 0, "pthread_mutex_lock failed with error \(status)")
        return true
    }

    /// Acquires the lock if no other thread holds it.
    ///
    /// - Returns: `true` once the lock is held; `false`, without waiting, when another thread holds it.
    ///   A `.recursive` lock already held by the caller is acquired again.
    func tryLock() -> Bool {
        pthread_mutex_trylock(mutex) == 0
    }

    /// Releases the lock.
    func unlock() {
        let status = pthread_mutex_unlock(mutex)
        precondition(status == 0, "pthread_mutex_unlock failed with error \(status)")
    }

    /// Runs `body` while holding the lock.
    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
