import DispatchStore
import Foundation

/// A snapshot or a checkpoint in the timeline, with the digests it holds compared with the states
/// the replay computed.
struct Marker {
    let kind: String
    let text: String
    var file: Int?
    var line: Int?
    var checks: [CheckResult] = []
}
