#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex and a condition variable: for a thread that sleeps until others tell it there is work
/// (a replica's applier, its driver thread and the threads that feed it: nats.c's delivery,
/// acknowledgements, performing tasks), and for the short critical sections that several threads
/// take per message (the publisher's outbox, the registries C callbacks look objects up in).
///
/// On glibc the mutex spins briefly before it sleeps (an adaptive mutex): the critical sections are
/// a few dozen instructions, and a futex sleep and wake-up would cost more.
final class ConditionLock: @unchecked Sendable {
    // @unchecked: the mutex and the condition are only used through pthread calls, which are
    // thread-safe; they live at fixed addresses from init to deinit.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if canImport(Glibc)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        #endif
        var status = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(status == 0, "pthread_mutex_init failed with error \(status)")
        var conditionAttributes = pthread_condattr_t()
        pthread_condattr_init(&conditionAttributes)
        #if !canImport(Darwin)
        // Timed waits measure the monotonic clock, as ContinuousClock does, not the wall clock.
        pthread_condattr_setclock(&conditionAttributes, CLOCK_MONOTONIC)
        #endif
        status = pthread_cond_init(condition, &conditionAttributes)
        pthread_condattr_destroy(&conditionAttributes)
        precondition(status == 0, "pthread_cond_init failed with error \(status)")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Sleeps, letting the lock go, until ``broadcast()`` or `deadline` (for ever when `nil`).
    ///
    /// It holds the lock again when it returns. Call it holding the lock, in a loop that checks
    /// what it waits for (a wait may end early).
    func wait(until deadline: ContinuousClock.Instant?) {
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return
        }
        let remaining = deadline - ContinuousClock.now
        guard remaining > .zero else { return }
        #if canImport(Darwin)
        var interval = timespec()
        let (seconds, attoseconds) = remaining.components
        interval.tv_sec = Int(seconds)
        interval.tv_nsec = Int(attoseconds / 1_000_000_000)
        pthread_cond_timedwait_relative_np(condition, mutex, &interval)
        #else
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = remaining.components
        var nanoseconds = Int(now.tv_nsec) + Int(attoseconds / 1_000_000_000)
        var wholeSeconds = Int(now.tv_sec) + Int(min(seconds, Int64(Int32.max)))
        if nanoseconds >= 1_000_000_000 {
            nanoseconds -= 1_000_000_000
            wholeSeconds += 1
        }
        var until = timespec(tv_sec: wholeSeconds, tv_nsec: nanoseconds)
        pthread_cond_timedwait(condition, mutex, &until)
        #endif
    }

    /// Wakes every thread sleeping in ``wait(until:)``.
    ///
    /// Call it holding the lock, or not.
    func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
