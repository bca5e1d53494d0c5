/// How a ``LockedBox``'s mutex behaves when the thread that holds it locks it again.
package enum MutexKind {
    /// The cheapest: locking again deadlocks (on Linux the mutex spins briefly before sleeping).
    case normal
    /// Locking again is reported instead of deadlocking, which is how the library turns re-entrant
    /// access to a store into a clear error.
    case errorChecking
    /// The holder may lock again (observer delivery, which callbacks may re-enter).
    case recursive
}
