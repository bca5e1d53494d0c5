import Foundation
import TodoCore

/// Passes the app's save-status reports to the interface, which is created after the app.
final class SaveStatusRelay: @unchecked Sendable {
    // @unchecked: `storedHandler` is only touched while holding `lock`; it is called outside it.
    /// Guards `storedHandler`.
    private let lock = NSLock()
    /// The interface's handler, once it exists.
    private var storedHandler: (@Sendable (TodoStorage.Failure?) -> Void)?

    /// What to call with each report: the failure, or `nil` when the file holds the list again.
    var handler: (@Sendable (TodoStorage.Failure?) -> Void)? {
        get { lock.withLock { storedHandler } }
        set { lock.withLock { storedHandler = newValue } }
    }

    /// Passes a report on to the handler, if there is one yet.
    ///
    /// - Parameter failure: Why the save failed, or `nil` when the file holds the list again.
    func report(_ failure: TodoStorage.Failure?) {
        handler?(failure)
    }
}
