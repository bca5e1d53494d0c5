// `swift run -c release dispatch-bench [--json] [--scale F] [--repetitions N] [--only ID,ID] [--check]`
//
// Times every scenario (median of several repetitions after a warm-up), checks each result, and
// reports ns per operation next to its baseline measured in the same process, says what each figure
// is and where a missed target is explained; `--check` exits 1 when a target is missed.

import Foundation

/// Where a missed target or goal is explained: the section of the performance guide that says what
/// limits each scenario.
let missedTargetsExplanation = "Docs/Performance.md, section \"What limits each scenario\""

/// The goals `measurement` missed, each with its measure: `ratio 10.53, target <= 10`.
func misses(_ measurement: Measurement) -> [String] {
    var misses: [String] = []
    if let target = measurement.scenario.target, let ratio = measurement.ratio, !(ratio <= target) {
        misses.append(String(format: "ratio %.2f, target <= %g", ratio, target))
    }
    if let seconds = measurement.scenario.limit?.seconds, !(measurement.seconds <= seconds) {
        misses.append(String(format: "%.3f s per repetition, goal <= %g s", measurement.seconds, seconds))
    }
    if let megabytes = measurement.scenario.limit?.megabytes, let growth = measurement.memoryGrowth,
        !(growth <= megabytes)
    {
        misses.append(String(format: "memory grew %.1f MB, goal <= %g MB", growth, megabytes))
    }
    return misses
}

func usageError(_ problem: String) -> Never {
    FileHandle.standardError.write(Data("dispatch-bench: \(problem)\n".utf8))
    FileHandle.standardError.write(
        Data(
            "usage: dispatch-bench [--json] [--scale F] [--repetitions N] [--only IDS] [--check] [--target ID=RATIO]; --help explains\n"
                .utf8
        )
    )
    exit(64)
}

var json = false
var scale = 1.0
var repetitions = 5
var only: Set<String>?
var check = false
var targetOverrides: [String: Double] = [:]
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--json":
        json = true
    case "--scale":
        guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else {
            usageError("--scale needs a positive number")
        }
        scale = value
    case "--repetitions":
        guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
            usageError("--repetitions needs a positive whole number")
        }
        repetitions = value
    case "--only":
        only = Set((arguments.popFirst() ?? "").split(separator: ",").map { String($0) })
    case "--check":
        check = true
    case "--target":
        let parts = (arguments.popFirst() ?? "").split(separator: "=", maxSplits: 1)
        guard parts.count == 2, let ratio = Double(parts[1]), ratio > 0 else {
            usageError("--target needs a scenario and a positive ratio, as in --target S1=12")
        }
        targetOverrides[String(parts[0])] = ratio
    case "-h", "--help":
        print(
            """
            usage: dispatch-bench [--json] [--scale F] [--repetitions N] [--only ID,ID] [--check] [--target ID=RATIO]

              --json             print a JSON array of {id, ns_per_op, baseline, ratio, target, meets_target, ...}
                                 instead of a table
              --scale F          multiply every operation count by F (for example 0.01 for a quick run)
              --repetitions N    timed rounds after one warm-up round (default 5); each round runs every
                                 scenario once, and a ratio is the median of the per-round ratios
              --only IDS         run only these scenarios (their baselines run too)
              --check            exit with status 1 when a scenario misses its target
              --target ID=RATIO  check scenario ID against RATIO instead of its documented target
                                 (for another machine class); may be repeated

            Each scenario is timed as ns per operation; a ratio divides it by its baseline's, measured
            in the same round, and the target is the highest ratio the design aims for. Why a target
            is missed on the reference machine, and what was tried: \(missedTargetsExplanation).

            Build with -c release: swift run -c release dispatch-bench
            """
        )
        exit(0)
    default:
        usageError("unknown argument '\(argument)'")
    }
}

let all: [Scenario] = [
    baselineScenarios(scale: scale), libraryScenarios(scale: scale), realisticScenarios(scale: scale),
    scaleScenarios(scale: scale), journalScenarios(scale: scale), decoderScenarios(scale: scale),
    fileScenarios(scale: scale), soakScenarios(scale: scale), inspectorScenarios(scale: scale),
].flatMap { $0 }
let known = all.map(\.id)
/// The scenario `name` calls, whatever its case (`s1r` is `S1r`).
func knownID(_ name: String) -> String {
    guard let id = known.first(where: { $0.uppercased() == name.uppercased() }) else {
        usageError("no scenario is called '\(name)'; the scenarios are \(known.joined(separator: ", "))")
    }
    return id
}
only = only.map { Set($0.sorted().map(knownID)) }
targetOverrides = Dictionary(targetOverrides.sorted { $0.key < $1.key }.map { (knownID($0.key), $0.value) }) { $1 }
for id in targetOverrides.keys.sorted() where all.first(where: { $0.id == id })?.baseline == nil {
    usageError("\(id) has no baseline, so no ratio to give a target")
}
let scenarios = all.map { scenario in
    var scenario = scenario
    if let target = targetOverrides[scenario.id] { scenario.target = target }
    return scenario
}
let wanted: [Scenario] = {
    guard let only else { return scenarios }
    let baselines = Set(scenarios.filter { only.contains($0.id) }.compactMap(\.baseline))
    // S7's baseline is S1, whose own baseline is B1.
    let second = Set(scenarios.filter { baselines.contains($0.id) }.compactMap(\.baseline))
    return scenarios.filter { only.contains($0.id) || baselines.contains($0.id) || second.contains($0.id) }
}()

let ordered: [Measurement]
do {
    ordered = try measure(wanted, rounds: repetitions) { step in
        if !json { FileHandle.standardError.write(Data("dispatch-bench: \(step)\n".utf8)) }
    }
} catch {
    FileHandle.standardError.write(Data("dispatch-bench: \(error)\n".utf8))
    exit(1)
}

let missed = ordered.filter { $0.meetsTarget == false }

if json {
    let objects: [[String: Any]] = ordered.map { measurement in
        [
            "id": measurement.scenario.id,
            "ns_per_op": (measurement.nanosecondsPerOperation * 100).rounded() / 100,
            "baseline": measurement.scenario.baseline ?? measurement.scenario.id,
            "ratio": ((measurement.ratio ?? 1) * 1000).rounded() / 1000,
            "baseline_ns_per_op": measurement.baselineNanoseconds.map { ($0 * 100).rounded() / 100 } as Any?
                ?? NSNull(),
            "target": measurement.scenario.target as Any? ?? NSNull(),
            "operations": measurement.scenario.operations,
            "summary": measurement.scenario.summary,
            "notes": measurement.notes,
            "seconds": (measurement.seconds * 1e6).rounded() / 1e6,
            "limit_seconds": measurement.scenario.limit?.seconds as Any? ?? NSNull(),
            "limit_megabytes": measurement.scenario.limit?.megabytes as Any? ?? NSNull(),
            "memory_growth_megabytes": measurement.memoryGrowth.map { ($0 * 100).rounded() / 100 } as Any? ?? NSNull(),
            "meets_target": measurement.meetsTarget as Any? ?? NSNull(),
        ]
    }
    let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
    print(String(decoding: data, as: UTF8.self))
} else {
    func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
    print("\(pad("id", 4)) \(pad("ns/op", 11)) \(pad("baseline", 16)) \(pad("ratio", 8)) \(pad("target", 8)) scenario")
    for measurement in ordered {
        let baseline =
            measurement.scenario.baseline.map { id in
                String(format: "%@ %.1f", id, measurement.baselineNanoseconds ?? 0)
            } ?? "-"
        let ratio = measurement.ratio.map { String(format: "%.2f", $0) } ?? "-"
        var goals = measurement.scenario.target.map { [String(format: "<= %g", $0)] } ?? []
        if let seconds = measurement.scenario.limit?.seconds { goals.append(String(format: "<= %g s", seconds)) }
        if let megabytes = measurement.scenario.limit?.megabytes { goals.append(String(format: "<= %g MB", megabytes)) }
        let target = goals.isEmpty ? "-" : goals.joined(separator: ", ")
        let verdict = measurement.meetsTarget.map { $0 ? "" : "  (MISSED, see below)" } ?? ""
        var facts: [String] = []
        if measurement.scenario.limit != nil || measurement.scenario.showsTotal {
            facts.append(String(format: "%.3f s per repetition", measurement.seconds))
        }
        if !measurement.notes.isEmpty { facts.append(measurement.notes) }
        let notes = facts.isEmpty ? "" : " [\(facts.joined(separator: "; "))]"
        print(
            "\(pad(measurement.scenario.id, 4)) \(pad(String(format: "%.1f", measurement.nanosecondsPerOperation), 11)) "
                + "\(pad(baseline, 16)) \(pad(ratio, 8)) \(pad(target, 8)) \(measurement.scenario.summary)\(notes)\(verdict)"
        )
    }
    print(
        """

        ns/op     the median time of one operation over \(repetitions) timed round\(repetitions == 1 ? "" : "s"), in nanoseconds
        baseline  the scenario the ratio compares with, and its ns/op
        ratio     the median, over the rounds, of ns/op divided by the baseline's ns/op in the same round
        target    the highest ratio the design aims for, or the most time (s) and memory growth (MB)
                  one repetition may take; [notes] are facts measured after the run
        """
    )
    for measurement in missed {
        print(
            "\(measurement.scenario.id) missed its target: \(misses(measurement).joined(separator: "; ")). "
                + "Why, and what was tried: \(missedTargetsExplanation)."
        )
    }
}

if check {
    if missed.isEmpty {
        FileHandle.standardError.write(Data("dispatch-bench: --check: every target was met\n".utf8))
    } else {
        let ids = missed.map(\.scenario.id).joined(separator: ", ")
        FileHandle.standardError.write(
            Data(
                ("dispatch-bench: --check: \(missed.count) target\(missed.count == 1 ? "" : "s") missed (\(ids)); "
                    + "see \(missedTargetsExplanation)\n").utf8
            )
        )
        exit(1)
    }
}
