import DispatchStore
import Foundation

extension ActionRecord {
    /// What a finished transaction gives a log.
    enum Made {
        /// Nothing: no store applied its action.
        case none
        /// Nothing: its action is not `Encodable`.
        case skipped
        /// An error: the action's type has no stable name, or it failed to encode.
        case failed(ActionLogError)
        /// The line to write, with its newline.
        case line(Data)
    }

    /// The record of `result`'s transaction.
    ///
    /// - Parameters:
    ///   - result: How the transaction ended.
    ///   - dispatcher: The dispatcher that ran it, for checksums.
    ///   - path: The log, for errors.
    ///   - checksumEvery: Take a checksum of each store whose number for this action is a multiple
    ///     of this; `nil` for none.
    /// - Returns: The line, or why there is none.
    static func make(
        for result: DispatchResult,
        in dispatcher: Dispatcher,
        path: String,
        checksumEvery: Int?
    ) -> Made {
        var stores: [String] = []
        var numbers: [UInt64] = []
        var unfinished: [String] = []
        for outcome in result.outcomes {
            guard let number = outcome.sequenceNumber else { continue }
            stores.append(outcome.storeIdentifier)
            numbers.append(number)
            if !outcome.status.isSuccessful { unfinished.append(outcome.storeIdentifier) }
        }
        guard !stores.isEmpty else { return .none }
        let transaction = result.transaction
        guard let payload = transaction.action as? any Encodable else { return .skipped }
        let type: String
        do {
            type = try ActionTypeNames.stableName(of: Swift.type(of: transaction.action), path: path)
        } catch {
            return .failed(error)
        }
        var checks: [Check] = []
        if let checksumEvery {
            for (index, identifier) in stores.enumerated() where numbers[index] % UInt64(checksumEvery) == 0 {
                if let check = dispatcher.store(with: identifier)?.stateDigest { checks.append(check) }
            }
        }
        let encoded: Data
        do {
            encoded = try ActionRecord.payload(of: payload)
        } catch {
            return .failed(.unencodable(transaction: transaction, path: path, reason: "\(error)"))
        }
        let record = ActionRecord(
            id: transaction.id,
            time: Date(),
            mode: transaction.mode,
            target: transaction.targetIdentifier,
            stores: stores,
            sequenceNumbers: numbers,
            unfinished: unfinished,
            checks: checks,
            type: type
        )
        let line = record.encodedLine(payload: encoded)
        // The newline is not part of the line: readers accept what this refuses.
        guard line.count - 1 <= ActionLog.maximumLineLength else {
            let limit = LineReader.describe(size: ActionLog.maximumLineLength)
            let reason = "its line would be \(line.count - 1) bytes, more than the \(limit) a line may hold"
            return .failed(.unencodable(transaction: transaction, path: path, reason: reason))
        }
        return .line(line)
    }
}
