import DispatchStore
import Foundation

/// One recorded digest of a store's state, compared with the state the replay computed.
struct CheckResult {
    let store: Int
    let sequenceNumber: UInt64
    /// Whether they match; `nil` until the store reached the sequence number (or never did).
    var matches: Bool?
    let line: Int
}
