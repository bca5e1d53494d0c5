/// What ``Dispatcher/shutdown(_:timeout:)`` does with the transactions in flight.
public enum ShutdownPolicy: Sendable, Hashable {
    /// Let every queued or running transaction finish normally.
    case drain
    /// Cancel the queued and running transactions: operations not started are skipped, running
    /// ones are asked to stop.
    case cancel
}
