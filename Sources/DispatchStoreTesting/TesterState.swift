import DispatchStore

/// What the tester and its middleware share, under one lock.
struct TesterState: Sendable {
    var exhaustivity: DispatcherTester.Exhaustivity
    var timeout: Duration
    var isFinished = false
    /// The step running now, as the test wrote it (`send(CounterAction.increase)`).
    var runningStep: String?
    var sequence = 0
    /// Finished transactions neither claimed by a `send` nor received yet, in finish order.
    var unclaimed: [FinishedTransaction] = []
    /// Transactions started in some store and not finished, by id.
    var inFlight: [UInt64: InFlightTransaction] = [:]
    /// The sends whose transaction has not finished (only timed-out ones outlive their step), by
    /// token, with the step that made them.
    var pendingSends: [Int: String] = [:]
    var nextSendToken = 0
    /// The states, from before the step, of the stores that only transactions finishing during a
    /// send changed, and that the send did not expect: their receives check those changes.
    var leftToReceive: [String: any StateType] = [:]
    /// The states the last step ended with, and the sequence of the transaction it checked.
    var baseline: StoreStates?
    var baselineSequence = 0
    /// The step that took the baseline, for messages.
    var baselineStep = "the tester's creation"
    /// Woken when a transaction finishes (a `receive` waiting for one).
    var finishWaiter: OneShot<Bool>?
    /// Woken when the last pending send finishes (`finish()` waiting for them).
    var sendsWaiter: OneShot<Bool>?
}
