/// A lock that guards no value of its own, for state that cannot move into a ``LockedBox``.
final class Lock: @unchecked Sendable {
    // @unchecked: the mutex is the synchronisation primitive; `storage` is never reassigned.
    private let storage: LockStorage<Void>

    init(_ kind: MutexKind = .normal) {
        storage = .create(value: (), kind: kind)
    }

    /// Runs `body` while holding the lock.
    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        storage.lock()
        defer { storage.unlock() }
        return try body()
    }

    /// Acquires the lock.
    @inline(__always)
    func lock() {
        storage.lock()
    }

    /// Acquires the lock if no other thread holds it (or, for a recursive lock, the caller does).
    ///
    /// - Returns: `true` once held; `false`, without waiting, when another thread holds it.
    @inline(__always)
    func tryLock() -> Bool {
        storage.tryLock()
    }

    /// Releases the lock.
    @inline(__always)
    func unlock() {
        storage.unlock()
    }
}
