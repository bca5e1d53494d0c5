/// One subscription to a store's changes.
///
/// Not generic: the delivery loop walks an array of these, and generic code that is not
/// specialised for the caller's types would look up runtime metadata on every element. The
/// typed work sits in `call`, a closure built by the `@inlinable` subscribe methods, so the
/// caller's module compiles it for its concrete state and action types.
@usableFromInline
final class ObserverEntry {
    /// Calls the subscriber with a change: a ``Change`` of the entry's store's `State` and `Action`.
    ///
    /// The delivery holds the change for the whole call, so the call may lend its state and action
    /// to the subscriber's callback without copying them.
    @usableFromInline
    typealias Call = (_ change: AnyObject) -> Void

    let id: UInt64
    /// The object whose lifetime bounds the subscription, for `register(observer:callback:)`.
    weak var object: AnyObject?
    /// Whether `object` was given: such an observer ends when the object is released.
    let isBoundToObject: Bool
    /// For a key-path subscription, the group that tells whether the value changed.
    let group: KeyPathGroup?
    let call: Call
    /// The number of the first change the subscription receives: the changes queued before it was made are already in
    /// the state it started from.
    ///
    /// Set under the store's lock before the entry is published.
    var since: UInt64 = 0

    @usableFromInline
    init(id: UInt64, object: AnyObject?, group: KeyPathGroup?, call: @escaping Call) {
        self.id = id
        self.object = object
        self.isBoundToObject = object != nil
        self.group = group
        self.call = call
    }
}
