import Foundation

/// What the engine calls when a store's operation that was still running finishes: its status, and
/// the sequence number the store gave the action (0 when the operation never ran its body).
typealias StepFinishHook = @Sendable (StoreOutcome.Status, UInt64) -> Void

/// A store as the engine sees it, without its generic types.
///
/// The engine is not generic: generic code that is not specialised for the caller's types looks
/// up the metadata of every generic type it mentions at run time, which would cost more than a
/// whole inline dispatch. Only `Store`'s own methods handle the concrete state and action types.
protocol StoreEntry: AnyStore {
    var lockRank: UInt64 { get }
    var stateLock: LockedBox<StoreBookkeeping> { get }
    var stateWhileLocked: any StateType { get }
    var sequenceNumber: UInt64 { get }
    var sequenceNumberWhileLocked: UInt64 { get }
    func replaceStateWhileLocked(_ state: any StateType) -> Bool?
    func deliverPendingChanges()
    func deliverPendingChangesIfFree()
    func claim(for dispatcher: ObjectIdentifier) -> StoreClaim
    func release(from dispatcher: ObjectIdentifier)
    /// Ends the store's state streams: it was unregistered.
    func endStateStreams()

    /// Stops counting `operation`, which a run gave up on, as in flight: changes made outside any
    /// operation reach the observers again, and its finishing later commits nothing for the run.
    func abandon(_ operation: Operation)

    /// Asks the reducer for the operation of `action` and starts it on the calling thread.
    ///
    /// The action arrives as a pointer to its value: the route guarantees that its type is the
    /// store's `Action`, and reading it that way costs no dynamic cast.
    ///
    /// - Parameters:
    ///   - action: A pointer to the dispatched action, valid during the call.
    ///   - dependencies: The operations of the stores this one waits for in the transaction (all
    ///     finished); asked for only when the reducer returns an operation of its own.
    ///   - context: The calling thread's context.
    ///   - makeFinishHook: Called at most once, only when the operation does not finish right away.
    /// - Returns: How the step started, or its status when it already finished.
    func beginStep(
        _ action: UnsafeRawPointer,
        dependencies: [Operation]?,
        context: ThreadContext,
        makeFinishHook: () -> StepFinishHook
    ) -> TransactionRun.StepStart
}

extension TransactionRun {
    /// How a store's step started: what `StoreEntry.beginStep` returns.
    ///
    /// Plain fields, not a `StoreOutcome.Status`, whose payload would be copied and destroyed on
    /// every inline step (S1).
    struct StepStart {
        /// The operation the reducer returned (`nil` for an inline reduction).
        let operation: Operation?
        /// How the step ended if it finished at once; `nil` while its operation runs (the finish
        /// hook will be called exactly once).
        let ending: TransactionMachine.Ending?
        /// The error of a failed step (the machine records only that it failed).
        let error: (any Error)?
        /// Whether a change may be queued for the store's observers.
        let needsDelivery: Bool

        static func finished(needsDelivery: Bool) -> StepStart {
            StepStart(operation: nil, ending: .finished, error: nil, needsDelivery: needsDelivery)
        }

        static func failed(_ error: any Error, needsDelivery: Bool) -> StepStart {
            StepStart(operation: nil, ending: .failed, error: error, needsDelivery: needsDelivery)
        }

        /// A step whose operation finished before starting it returned.
        static func ended(_ operation: Operation, _ status: StoreOutcome.Status, needsDelivery: Bool) -> StepStart {
            switch status {
            case .finished:
                StepStart(operation: operation, ending: .finished, error: nil, needsDelivery: needsDelivery)
            case .cancelled:
                StepStart(operation: operation, ending: .cancelled, error: nil, needsDelivery: needsDelivery)
            case .failed(let error):
                StepStart(operation: operation, ending: .failed, error: error, needsDelivery: needsDelivery)
            }
        }

        /// A step whose operation runs on: the finish hook will tell how it ends.
        static func running(_ operation: Operation) -> StepStart {
            StepStart(operation: operation, ending: nil, error: nil, needsDelivery: true)
        }
    }
}
