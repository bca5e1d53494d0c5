/// Objects by a key that C callbacks carry in place of a pointer, held weakly: a callback that
/// comes after its object is gone finds nothing, rather than freed memory.
final class Registry<Object: AnyObject & Sendable>: @unchecked Sendable {
    // @unchecked: `objects` and `nextKey` are only reached holding `lock`.
    private let lock = ConditionLock()
    private var objects: [UInt: Weak] = [:]
    private var nextKey: UInt = 1

    private struct Weak {
        weak var object: Object?
    }

    /// A key no object of this registry has had.
    func newKey() -> UInt {
        lock.withLock {
            defer { nextKey += 1 }
            return nextKey
        }
    }

    /// Finds `object` under `key` from now on.
    func add(_ object: Object, for key: UInt) {
        lock.withLock { objects[key] = Weak(object: object) }
    }

    /// Forgets the object under `key`.
    func remove(_ key: UInt) {
        lock.withLock { _ = objects.removeValue(forKey: key) }
    }

    /// The object under `key`, if it is still there.
    func object(for key: UInt) -> Object? {
        lock.withLock { objects[key]?.object }
    }
}
