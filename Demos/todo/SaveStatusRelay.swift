import DispatchStore
import TodoCore

/// Passes the app's save-status reports to the interface, which is created after the app.
final class SaveStatusRelay: Sendable {
    /// The interface's handler, once it exists.
    private let storedHandler = Locked<(@Sendable (TodoStorage.Failure?) -> Void)?>(nil)

    /// What to call with each report: the failure, or `nil` when the file holds the list again.
    var handler: (@Sendable (TodoStorage.Failure?) -> Void)? {
        get { storedHandler.value }
        set { storedHandler.withLock { $0 = newValue } }
    }

    /// Passes a report on to the handler, if there is one yet.
    ///
    /// - Parameter failure: Why the save failed, or `nil` when the file holds the list again.
    func report(_ failure: TodoStorage.Failure?) {
        handler?(failure)
    }
}
