/// The subscriptions to one key path of the state: one comparison per change for all of them.
///
/// `changed` is only touched under the store's delivery lock.
@usableFromInline
final class KeyPathGroup {
    /// Compares the value in the state of a change (a ``Change`` of the store's `State` and
    /// `Action`) with the last one delivered; records it and returns `true` when it differs.
    @usableFromInline
    typealias Update = (_ change: AnyObject) -> Bool

    let keyPath: AnyKeyPath
    /// The typed last and current values (a `KeyPathValues`), for subscriptions joining later.
    @usableFromInline
    let values: AnyObject
    let update: Update
    /// The number of the first change the group follows: it starts from the value in the state when it was made, which
    /// the changes queued before already led to.
    ///
    /// Set under the store's lock before the group is published.
    var since: UInt64 = 0

    @usableFromInline
    init(keyPath: AnyKeyPath, values: AnyObject, update: @escaping Update) {
        self.keyPath = keyPath
        self.values = values
        self.update = update
    }
}
