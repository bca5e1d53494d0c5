/// What claiming a store for a dispatcher found.
enum StoreClaim {
    /// The store was free; it now belongs to the dispatcher.
    case claimed
    /// The store already belonged to the same dispatcher.
    case alreadyHeld
    /// Another dispatcher holds the store.
    case heldElsewhere
}
