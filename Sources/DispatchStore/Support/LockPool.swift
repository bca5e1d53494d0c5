/// A fixed set of locks shared by short-lived objects, so that creating one costs no allocation.
///
/// Hold a pool lock only briefly, never while calling out or taking another lock: unrelated
/// objects may share it.
enum LockPool {
    private static let locks = (0..<64).map { _ in Lock() }

    /// The lock for the object numbered `number` (for example a transaction id).
    static func lock(for number: UInt64) -> Lock {
        locks[Int(number & 63)]
    }
}
