extension TransactionRun {
    /// A run that a timer may find gone, handed to another thread.
    struct WeakReference: @unchecked Sendable {
        // @unchecked: see `Reference`.
        weak var run: TransactionRun?
    }

    /// A run, handed to other threads: by a transaction (for `cancel()` and `storeIdentifiers`), a
    /// finish hook, a timer.
    struct Reference: @unchecked Sendable {
        // @unchecked: a run's `transaction`, `configuration` and `isShared` are written only while
        // one thread owns it (creation, `configure`, its driver before it shares the run) and
        // otherwise only read; its state is touched under its lock, which only the driving thread
        // skips, and only while no other thread can reach the run.
        let run: TransactionRun
    }
}
