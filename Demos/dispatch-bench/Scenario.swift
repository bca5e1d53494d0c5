import Foundation

/// One timed scenario: a setup, a timed body and a check of the result.
struct Scenario {
    /// `B1`, `S1`, ...
    let id: String
    /// What it measures.
    let summary: String
    /// How many operations one repetition performs (the divisor of ns/op).
    let operations: Int
    /// The scenario the ratio is taken against, if any.
    let baseline: String?
    /// The most `ratio` may be, if the scenario has a target.
    let target: Double?
    /// The most one repetition may take, in time and in memory, if the scenario has such goals.
    var limit: Limit?
    /// Whether the table shows the time of a whole repetition (for the scaling rows).
    var showsTotal = false
    /// Prepares a repetition and returns the timed body and the check that follows it.
    let prepare: () -> Repetition

    /// Absolute goals for one repetition.
    struct Limit {
        /// The most one repetition may take, in seconds.
        var seconds: Double?
        /// The most the memory may grow during one repetition, in MB.
        var megabytes: Double?
    }

    init(
        id: String,
        summary: String,
        operations: Int,
        baseline: String?,
        target: Double?,
        limit: Limit? = nil,
        prepare: @escaping () -> Repetition
    ) {
        self.id = id
        self.summary = summary
        self.operations = operations
        self.baseline = baseline
        self.target = target
        self.limit = limit
        self.prepare = prepare
    }
}

/// A prepared repetition of a scenario.
struct Repetition {
    /// The timed part.
    let run: () -> Void
    /// Verifies the result after `run`; returns a description of what is wrong, or `nil`.
    let check: () -> String?
    /// Extra facts to report (for example memory), computed after `run`.
    var notes: () -> String = { "" }
    /// How much the memory grew during `run`, in MB, for a scenario with a memory goal.
    var memoryGrowth: () -> Double? = { nil }
}

/// The measured result of a scenario.
struct Measurement {
    let scenario: Scenario
    /// The median over the timed rounds.
    let nanosecondsPerOperation: Double
    /// The baseline's median, when the scenario has one.
    var baselineNanoseconds: Double?
    /// The median of the per-round ratios to the baseline measured in the same round.
    var ratio: Double?
    var notes: String
    /// The largest memory growth over the rounds, warm-up included, in MB, when the scenario reports it.
    var memoryGrowth: Double?

    /// The time one repetition took (the median), in seconds.
    var seconds: Double {
        nanosecondsPerOperation * Double(scenario.operations) / 1e9
    }

    /// Whether every goal of the scenario was met; `nil` when it has none.
    var meetsTarget: Bool? {
        var verdicts: [Bool] = []
        if let target = scenario.target, let ratio { verdicts.append(ratio <= target) }
        if let seconds = scenario.limit?.seconds { verdicts.append(self.seconds <= seconds) }
        if let megabytes = scenario.limit?.megabytes, let memoryGrowth { verdicts.append(memoryGrowth <= megabytes) }
        return verdicts.isEmpty ? nil : verdicts.allSatisfy { $0 }
    }
}

/// Runs every scenario once per round: one warm-up round, then `rounds` timed ones.
///
/// A slow phase of a noisy machine then affects a scenario and its baseline alike. Each result is
/// checked.
func measure(_ scenarios: [Scenario], rounds: Int, progress: (String) -> Void) throws -> [Measurement] {
    let clock = ContinuousClock()
    var samples: [String: [Double]] = [:]
    var notes: [String: String] = [:]
    var growth: [String: Double] = [:]
    for round in 0...rounds {
        progress(round == 0 ? "warm-up round" : "round \(round) of \(rounds)")
        for scenario in scenarios {
            let repetition = scenario.prepare()
            let elapsed = clock.measure(repetition.run)
            if let problem = repetition.check() {
                throw BenchmarkFailure(message: "\(scenario.id) produced a wrong result: \(problem)")
            }
            notes[scenario.id] = repetition.notes()
            if let grown = repetition.memoryGrowth() { growth[scenario.id] = max(growth[scenario.id] ?? grown, grown) }
            guard round > 0 else { continue }
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            samples[scenario.id, default: []].append(nanoseconds / Double(scenario.operations))
        }
    }
    return scenarios.map { scenario in
        let own = samples[scenario.id] ?? []
        var measurement = Measurement(
            scenario: scenario,
            nanosecondsPerOperation: median(own),
            baselineNanoseconds: nil,
            ratio: nil,
            notes: notes[scenario.id] ?? "",
            memoryGrowth: growth[scenario.id]
        )
        if let baseline = scenario.baseline, let reference = samples[baseline] {
            measurement.baselineNanoseconds = median(reference)
            measurement.ratio = median(zip(own, reference).map { $0 / $1 })
        }
        return measurement
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted.count.isMultiple(of: 2)
        ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let message: String

    var description: String {
        message
    }
}
