// `swift run -c release dispatch-bench [--json] [--scale F] [--repetitions N] [--only ID,ID]`
//
// Times every scenario (median of several repetitions after a warm-up), checks each result, and
// reports ns per operation next to its baseline measured in the same process.

import Foundation

var json = false
var scale = 1.0
var repetitions = 5
var only: Set<String>?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--json":
        json = true
    case "--scale":
        guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else {
            FileHandle.standardError.write(Data("dispatch-bench: --scale needs a positive number\n".utf8))
            exit(64)
        }
        scale = value
    case "--repetitions":
        guard let value = arguments.popFirst().flatMap(Int.init), value > 0 else {
            FileHandle.standardError.write(Data("dispatch-bench: --repetitions needs a positive whole number\n".utf8))
            exit(64)
        }
        repetitions = value
    case "--only":
        only = Set((arguments.popFirst() ?? "").split(separator: ",").map { $0.uppercased() })
    case "-h", "--help":
        print(
            """
            usage: dispatch-bench [--json] [--scale F] [--repetitions N] [--only ID,ID]

              --json           print a JSON array of {id, ns_per_op, baseline, ratio} instead of a table
              --scale F        multiply every operation count by F (for example 0.01 for a quick run)
              --repetitions N  timed rounds after one warm-up round (default 5); each round runs every
                               scenario once, and a ratio is the median of the per-round ratios
              --only IDS       run only these scenarios (their baselines run too)

            Build with -c release: swift run -c release dispatch-bench
            """
        )
        exit(0)
    default:
        FileHandle.standardError.write(Data("dispatch-bench: unknown argument '\(argument)'\n".utf8))
        exit(64)
    }
}

let all =
    baselineScenarios(scale: scale) + libraryScenarios(scale: scale) + scaleScenarios(scale: scale)
    + journalScenarios(scale: scale)
let wanted: [Scenario] = {
    guard let only else { return all }
    let baselines = Set(all.filter { only.contains($0.id) }.compactMap(\.baseline))
    // S7's baseline is S1, whose own baseline is B1.
    let second = Set(all.filter { baselines.contains($0.id) }.compactMap(\.baseline))
    return all.filter { only.contains($0.id) || baselines.contains($0.id) || second.contains($0.id) }
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
        let verdict = measurement.meetsTarget.map { $0 ? "" : "  (MISSED)" } ?? ""
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
}
