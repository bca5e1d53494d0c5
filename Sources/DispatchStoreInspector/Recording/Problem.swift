import DispatchStore
import Foundation

/// A line or a file that could not be used, or a way in which a replay did not reproduce the run.
struct Problem {
    /// A short name for the page: `torn`, `unreadable`, `unknownType`, `divergence`, `dropped`,
    /// `encoding`, `recovery`.
    let kind: String
    let message: String
    var file: Int?
    var line: Int?
    /// The row that shows it, if it has one.
    var row: Int?
}
