/// A value that is only read or written while holding the lock that comes with it, in the manner of
/// NIO's `NIOLockedValueBox`.
///
/// ```swift
/// let counter = LockedBox(0)
/// counter.withLockedValue { $0 += 1 }
/// ```
///
/// The box is `Sendable` exactly when its value is. Its `lock()`, `unlock()` and ``valuePointer``
/// give manual control for the few places that must hold several locks at once or release the lock
/// in another scope (the library names what such a holder calls `…Locked`).
package struct LockedBox<Value> {
    let storage: LockStorage<Value>

    /// Creates a box holding `value`.
    ///
    /// - Parameters:
    ///   - value: The initial value.
    ///   - kind: How the lock behaves when its holder locks it again; `.normal` by default.
    package init(_ value: Value, kind: MutexKind = .normal) {
        storage = .create(value: value, kind: kind)
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLockedValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        storage.lock()
        defer { storage.unlock() }
        return try storage.withUnsafeMutablePointerToHeader { try body(&$0.pointee) }
    }

    // MARK: Manual control, for the few places that hold several locks at once or release the lock
    // in another scope. Pair every lock with an unlock.

    /// Acquires the lock, blocking while another thread holds it.
    @inline(__always)
    package func lock() {
        storage.lock()
    }

    /// Acquires the lock if no other thread holds it.
    ///
    /// - Returns: `true` once held; `false`, without waiting, when another thread holds it.
    @inline(__always)
    package func tryLock() -> Bool {
        storage.tryLock()
    }

    /// Releases the lock.
    @inline(__always)
    package func unlock() {
        storage.unlock()
    }

    /// The value's address, stable for the box's lifetime: for a hot path that locks and unlocks by hand.
    ///
    /// Touch it only while holding the lock (or while no other thread can reach the box).
    package var valuePointer: UnsafeMutablePointer<Value> {
        storage.withUnsafeMutablePointerToHeader { $0 }
    }
}

// @unchecked: the value is only reached while holding the box's lock.
extension LockedBox: @unchecked Sendable where Value: Sendable {}
