import DispatchStore
import Foundation

/// A weak reference to a dispatcher.
struct WeakDispatcher {
    weak var dispatcher: Dispatcher?
}
