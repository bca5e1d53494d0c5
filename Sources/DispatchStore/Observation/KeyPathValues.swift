/// The last value delivered for a key path and the value of the change being delivered.
///
/// Touched only under the store's delivery lock, or under its state lock before the group is
/// published. Behind pointers, so that reading them skips the dynamic exclusivity check.
@usableFromInline
final class KeyPathValues<Value> {
    @usableFromInline
    let last: UnsafeMutablePointer<Value>
    @usableFromInline
    let current: UnsafeMutablePointer<Value>

    @usableFromInline
    init(_ value: Value) {
        last = .allocate(capacity: 1)
        last.initialize(to: value)
        current = .allocate(capacity: 1)
        current.initialize(to: value)
    }

    deinit {
        last.deinitialize(count: 1)
        last.deallocate()
        current.deinitialize(count: 1)
        current.deallocate()
    }
}
