import Foundation

/// What a nemesis run did, and what its checks found.
public struct NemesisReport: Sendable, CustomStringConvertible {
    /// The seed of the faults' choices.
    public var seed: UInt64 = 0
    /// Whether servers' faults overlapped (more than one server down or paused at once).
    public var overlappingServers = false
    /// How long faults were injected, in seconds.
    public var seconds: Double = 0
    /// How long the replicas took to catch up and finish once every fault was healed, in seconds.
    public var finishing: Double = 0
    /// The faults injected, by kind.
    public var faults: [Nemesis.Fault: Int] = [:]
    /// Appends attempted.
    public var attempted = 0
    /// Appends acknowledged (and applied by the replica that made them).
    public var acknowledged = 0
    /// Appends that failed with an error.
    public var failed = 0
    /// Appends cut short by a `kill -9` of their replica: neither acknowledged nor failed.
    public var indeterminate = 0
    /// The failed appends' error codes, and how many of each.
    public var failureCodes: [String: Int] = [:]
    /// The longest time without a successful append while faults were injected, in seconds.
    public var longestWithoutAppend: Double = 0
    /// The stream's last sequence number at the end.
    public var streamLast: UInt64 = 0
    /// How many messages each replica had not applied when it finished, by name.
    public var finalLag: [String: UInt64] = [:]
    /// How many times each replica started (1, plus one per `kill -9`).
    public var runs: [String: Int] = [:]
    /// How many checkpoints (sequence number, digest) were compared with the replay.
    public var checkpoints = 0
    /// What broke a promise: empty when every check held.
    public var violations: [String] = []

    /// The report as lines for a person.
    public var description: String {
        let codes = failureCodes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let lags = finalLag.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let starts = runs.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        let kinds = Nemesis.Fault.allCases.map { "\($0.rawValue) \(faults[$0] ?? 0)" }
        var lines: [String] = [
            String(
                format: "nemesis: %.0f s of faults (seed %llu), replicas finished %.1f s after healing",
                seconds,
                seed,
                finishing
            ) + (overlappingServers ? "; servers' faults overlapping" : "; one server's fault at a time"),
            "  faults: " + kinds.joined(separator: ", "),
            "  appends: \(attempted) attempted, \(acknowledged) acknowledged, \(failed) failed with an error, "
                + "\(indeterminate) cut short by kill -9",
            "  failures by code: " + (codes.isEmpty ? "none" : codes.joined(separator: ", ")),
            String(format: "  longest time without a successful append: %.1f s", longestWithoutAppend),
            "  stream: \(streamLast) messages; replicas' final lag: \(lags.joined(separator: ", ")); runs: "
                + starts.joined(separator: ", "),
            "  checks: \(checkpoints) checkpoints against the replay; "
                + (violations.isEmpty ? "every check held" : "\(violations.count) violation(s):"),
        ]
        // The first few of each kind: a broken promise tends to repeat for every message after it.
        var shown: [String: Int] = [:]
        for violation in violations {
            let kind = String(violation.prefix(while: { !$0.isNumber }).prefix(40))
            shown[kind, default: 0] += 1
            if shown[kind, default: 0] <= 5 { lines.append("    - \(violation)") }
        }
        for (kind, count) in shown.sorted(by: { $0.key < $1.key }) where count > 5 {
            lines.append("    (\(count) violations start \"\(kind)...\")")
        }
        return lines.joined(separator: "\n")
    }
}
