import Foundation

extension Duration {
    /// The duration as a `DispatchTimeInterval` in nanoseconds (saturating).
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let nanoseconds = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !nanoseconds.overflow, seconds >= 0 else { return seconds < 0 ? .nanoseconds(0) : .never }
        let total = nanoseconds.partialValue.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !total.overflow, total.partialValue <= Int64(Int.max) else { return .never }
        return .nanoseconds(Int(total.partialValue))
    }
}
