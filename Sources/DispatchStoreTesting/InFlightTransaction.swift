import DispatchStore

/// A transaction that started in some store and has not finished.
struct InFlightTransaction: Sendable {
    let transaction: Transaction
    /// The stores whose operation started and has not ended.
    var running: [String] = []
}
