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
    /// Prepares a repetition and returns the timed body and the check that follows it.
    let prepare: () -> Repetition
}

/// A prepared repetition of a scenario.
struct Repetition {
    /// The timed part.
    let run: () -> Void
    /// Verifies the result after `run`; returns a description of what is wrong, or `nil`.
    let check: () -> String?
    /// Extra facts to report (for example memory), computed after `run`.
    var notes: () -> String = { "" }
}

/// The measured result of a scenario.
struct Measurement {
    let scenario: Scenario
    let nanosecondsPerOperation: Double
    var baselineNanoseconds: Double?
    var notes: String

    var ratio: Double? {
        baselineNanoseconds.map { nanosecondsPerOperation / $0 }
    }

    var meetsTarget: Bool? {
        guard let target = scenario.target, let ratio else { return nil }
        return ratio <= target
    }
}

/// Runs a scenario: one warm-up, then `repetitions` timed runs; the median of ns/op.
func measure(_ scenario: Scenario, repetitions: Int) throws -> Measurement {
    let clock = ContinuousClock()
    var samples: [Double] = []
    var notes = ""
    for round in 0...repetitions {
        let repetition = scenario.prepare()
        let elapsed = clock.measure(repetition.run)
        if let problem = repetition.check() {
            throw BenchmarkFailure(message: "\(scenario.id) produced a wrong result: \(problem)")
        }
        notes = repetition.notes()
        if round > 0 {  // round 0 is the warm-up
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            samples.append(nanoseconds / Double(scenario.operations))
        }
    }
    samples.sort()
    return Measurement(
        scenario: scenario,
        nanosecondsPerOperation: samples[samples.count / 2],
        baselineNanoseconds: nil,
        notes: notes
    )
}

struct BenchmarkFailure: Error, CustomStringConvertible {
    let message: String

    var description: String {
        message
    }
}
