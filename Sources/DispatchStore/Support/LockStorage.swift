#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A value and the pthread mutex that guards it, in one allocation: the value is the buffer's
/// header, the mutex its one element, at a stable address for its whole life as POSIX requires.
///
/// Not final only so that a transaction run can be one (a run and its lock in one allocation, S4).
class LockStorage<Value>: ManagedBuffer<Value, pthread_mutex_t> {
    /// Creates the storage holding `value`, guarded by a mutex of the given kind; an instance of the
    /// class it is called on.
    static func create(value: Value, kind: MutexKind) -> Self {
        create(kind: kind) { value }
    }

    /// Creates the storage holding the value `makeValue` returns (built in place, not copied),
    /// guarded by a mutex of the given kind; an instance of the class it is called on.
    static func create(kind: MutexKind, makingValueWith makeValue: () -> Value) -> Self {
        let buffer = Self.create(minimumCapacity: 1) { _ in makeValue() }
        // Always succeeds: `create` allocates an instance of the class it is called on.
        let storage = unsafeDowncast(buffer, to: Self.self)
        storage.withUnsafeMutablePointerToElements { mutex in
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            switch kind {
            case .normal:
                #if canImport(Glibc)
                // Spins briefly before sleeping: the critical sections are a few dozen instructions,
                // and a futex sleep and wake-up would cost far more.
                pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
                #endif
            case .plain:
                pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_NORMAL))
            case .recursive:
                pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
            }
            let status = pthread_mutex_init(mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
            precondition(status == 0, "pthread_mutex_init failed with error \(status)")
        }
        return storage
    }

    deinit {
        // `ManagedBuffer` destroys the header (the value) itself.
        _ = withUnsafeMutablePointerToElements { pthread_mutex_destroy($0) }
    }

    @inline(__always)
    final func lock() {
        let status = withUnsafeMutablePointerToElements { pthread_mutex_lock($0) }
        precondition(status == 0, "pthread_mutex_lock failed with error \(status)")
    }

    /// Locks if no other thread holds the mutex.
    ///
    /// - Returns: `true` once locked; `false`, without waiting, when another thread holds it.
    @inline(__always)
    final func tryLock() -> Bool {
        withUnsafeMutablePointerToElements { pthread_mutex_trylock($0) } == 0
    }

    @inline(__always)
    final func unlock() {
        let status = withUnsafeMutablePointerToElements { pthread_mutex_unlock($0) }
        precondition(status == 0, "pthread_mutex_unlock failed with error \(status)")
    }
}
