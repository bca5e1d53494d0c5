/// A weak reference, for state that must not keep its target alive.
struct Weak<Target: AnyObject> {
    weak var value: Target?

    init(_ value: Target) {
        self.value = value
    }
}
