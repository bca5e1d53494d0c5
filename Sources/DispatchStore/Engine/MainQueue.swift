import Foundation

/// Tells whether the caller runs on the main queue or the main thread; on Linux, under
/// `dispatchMain()`, the main queue's blocks run on a worker thread, found by a queue-specific key.
enum MainQueue {
    private static let key: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the calling code runs on the main thread or in a block of the main queue.
    static var isCurrent: Bool { ThreadContext.current.isMainThread || DispatchQueue.getSpecific(key: key) == true }
}
