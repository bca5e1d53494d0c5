/// How a ``LockedBox``'s mutex behaves.
package enum MutexKind {
    /// For short critical sections of the library's own code: on Linux the mutex spins briefly
    /// before sleeping. Locking again from the holder deadlocks.
    case normal
    /// For a lock held across user code, whose length nobody knows (a store's lock around
    /// `reduce(_:into:)`): no spinning, the cheapest lock and unlock. Locking again from the holder
    /// deadlocks: the store tells re-entrant access by the thread's context instead.
    case plain
    /// The holder may lock again (observer delivery, which callbacks may re-enter).
    case recursive
}
