/// Where and when the operations of one dispatch run.
///
/// | mode | runs on | `dispatch` returns |
/// | --- | --- | --- |
/// | ``async`` | the dispatcher's concurrent queue | at once |
/// | ``serial`` | the dispatcher's serial lane, strictly after every earlier `.serial` dispatch finished | at once |
/// | ``sync`` | the calling thread | after the operations finished, observers ran and the completion ran |
/// | ``mainThread`` | the main queue, inline when the caller is already on it | at once, or when done if inline |
public enum DispatchMode: Sendable, Hashable, CustomStringConvertible {
    /// Run the operations on a concurrent queue; `dispatch` returns at once.
    ///
    /// Independent `.async` dispatches may run in parallel and finish in any order.
    case async
    /// Run the operations on the calling thread and return when everything is done.
    ///
    /// When `dispatch` returns, every reached store's operation has finished, its state is
    /// committed, its observers have been called, the middleware has been told and the completion
    /// has run. Safe to call from the main thread, from inside an operation and from an observer:
    /// nothing waits for another queue. An operation that finishes later on another thread is waited for.
    case sync
    /// Run the operations in strict FIFO order across all `.serial` dispatches of the dispatcher.
    ///
    /// An action's operations start only after every earlier `.serial` action has finished, including
    /// operations that finish later on another thread; `dispatch` returns at once.
    case serial
    /// Run the operations on the main queue, inline when the caller is already on it.
    ///
    /// On Linux the main queue runs only while the program drives it with `RunLoop.main.run()` or
    /// `dispatchMain()`. Under `dispatchMain()` its blocks run on a worker thread where
    /// `Thread.isMainThread` is false; use `dispatchPrecondition(condition: .onQueue(.main))` to check.
    case mainThread

    /// The mode's name, as written in code: `async`, `sync`, `serial` or `mainThread`.
    public var description: String {
        switch self {
        case .async: "async"
        case .sync: "sync"
        case .serial: "serial"
        case .mainThread: "mainThread"
        }
    }
}

extension DispatchMode {
    /// The mode named `name` (its ``description``).
    package init?(name: String) {
        switch name {
        case "async": self = .async
        case "sync": self = .sync
        case "serial": self = .serial
        case "mainThread": self = .mainThread
        default: return nil
        }
    }
}
