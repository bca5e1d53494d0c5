/// One subscription to a store's changes.
///
/// Not generic: the delivery loop walks an array of these, and generic code that is not
/// specialised for the caller's types would look up runtime metadata on every element. The
/// typed work sits in `call`, a closure built by the `@inlinable` subscribe methods, so the
/// caller's module compiles it for its concrete state and action types.
@usableFromInline
final class ObserverEntry {
    /// Calls the subscriber with pointers to the state and to the action (`nil` for a restore or an
    /// update outside any operation).
    ///
    /// The pointers are valid until the call runs code that may deliver (the subscriber's callback,
    /// which may dispatch `.sync`): they point into the delivery cursor, and a nested delivery may
    /// end the change there and start the next. A call reads the values it needs before it calls
    /// out, as the closures the subscribe methods build do.
    @usableFromInline
    typealias Call = (_ state: UnsafeRawPointer, _ action: UnsafeRawPointer?) -> Void

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
