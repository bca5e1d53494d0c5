import Foundation

/// Wakes threads waiting for a dispatcher's lanes to become idle.
final class IdleMonitor: @unchecked Sendable {
    // @unchecked: NSCondition is the synchronisation primitive.
    let condition = NSCondition()

    func signal() {
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
