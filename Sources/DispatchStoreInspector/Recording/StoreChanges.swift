import DispatchStore
import Foundation

/// How one store's state changed in a row.
struct StoreChanges {
    let store: Int
    /// The changes; empty while the state read after the row waits to be encoded (`isPending`).
    var changes: [TreeChange] = []
    /// Whether the state read after the row waits to be encoded (see ``StoreTrack``).
    var isPending = false
    /// Set when the state read after the row is not the one the row's action left: the store had
    /// applied later actions too (their sequence number), or a later state had been read before.
    var note: String?
}
