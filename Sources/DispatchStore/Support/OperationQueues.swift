import Foundation

/// Queues shared by all dispatchers.
enum OperationQueues {
    /// Runs operations that a reducer gave dependencies of its own, once those finish.
    static let externalDependencies: OperationQueue = {
        let queue = OperationQueue()
        queue.name = externalDependenciesUnderlying.label
        queue.underlyingQueue = externalDependenciesUnderlying
        return queue
    }()

    /// Retained here: `OperationQueue.underlyingQueue` does not retain its queue.
    private static let externalDependenciesUnderlying = DispatchQueue(label: "DispatchStore.externalDependencies")
    /// Fires transaction timeouts; serial, so it gets a thread even when the worker pool is busy.
    static let timers = DispatchQueue(label: "DispatchStore.timeouts")
    /// Reports the dispatches a shut-down dispatcher rejects.
    static let rejections = DispatchQueue(label: "DispatchStore.rejections")
}
