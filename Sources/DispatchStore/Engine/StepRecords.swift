/// What a run keeps about its steps for the result, besides the machine's phases: the errors of
/// the failed steps and the sequence numbers the stores gave the action.
///
/// Empty, and allocating nothing, until a step fails or applies the action in a run whose result
/// someone reads.
struct StepRecords {
    /// The errors of the failed steps, by step; `nil` until one fails.
    private var failures: [Int: any Error]?
    /// The sequence numbers, by step (0 where the store did not apply the action); empty until
    /// the first is recorded.
    private var sequenceNumbers: [UInt64] = []

    /// Keeps the error of failed step `index`.
    mutating func recordFailure(_ error: any Error, of index: Int) {
        if failures == nil { failures = [:] }
        failures?[index] = error
    }

    /// The error of failed step `index`.
    func failure(of index: Int) -> (any Error)? {
        failures?[index]
    }

    /// Keeps the sequence number step `index` (of `count`) got from its store.
    mutating func recordSequenceNumber(_ sequenceNumber: UInt64, of index: Int, count: Int) {
        if sequenceNumbers.isEmpty { sequenceNumbers = Array(repeating: 0, count: count) }
        sequenceNumbers[index] = sequenceNumber
    }

    /// The sequence number step `index` got from its store, or `nil` when it did not apply the
    /// action.
    func sequenceNumber(of index: Int) -> UInt64? {
        guard index < sequenceNumbers.count, sequenceNumbers[index] != 0 else { return nil }
        return sequenceNumbers[index]
    }

    /// Starts over for another transaction, keeping the storage.
    mutating func removeAll() {
        if failures != nil { failures = nil }
        if !sequenceNumbers.isEmpty { sequenceNumbers.removeAll(keepingCapacity: true) }
    }
}
