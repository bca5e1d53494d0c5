/// A lock that guards no value of its own, for state that cannot move into a ``LockedBox``.
final class Lock: Sendable {
    private let box: LockedBox<Void>

    init(_ kind: MutexKind = .normal) {
        box = LockedBox((), kind: kind)
    }

    /// Runs `body` while holding the lock.
    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        try box.withLockedValue { _ in try body() }
    }

    /// Acquires the lock.
    @inline(__always)
    func lock() {
        box.lock()
    }

    /// Acquires the lock if no other thread holds it (or, for a recursive lock, the caller does).
    ///
    /// - Returns: `true` once held; `false`, without waiting, when another thread holds it.
    @inline(__always)
    func tryLock() -> Bool {
        box.tryLock()
    }

    /// Releases the lock.
    @inline(__always)
    func unlock() {
        box.unlock()
    }
}
