import Foundation
import TestSupport
import Testing

@Suite("The benchmark program")
struct DispatchBenchTests {
    @Test("a quick run checks every scenario's result and reports JSON with id, ns_per_op, baseline and ratio")
    func quickRun() async throws {
        let run = try await offThePool {
            try Executables.run("dispatch-bench", ["--scale", "0.002", "--repetitions", "1", "--json"], timeout: 600)
        }
        #expect(run.status == 0, "\(run.standardError)")
        let data = Data(run.standardOutput.utf8)

        let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        let ids = rows.compactMap { $0["id"] as? String }
        #expect(ids == ["B1", "B2", "B3", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"])
        for row in rows {
            #expect(row["ns_per_op"] is Double || row["ns_per_op"] is Int, "\(row)")
            #expect(row["baseline"] is String, "\(row)")
            #expect(row["ratio"] is Double || row["ratio"] is Int, "\(row)")
            // A verdict exactly where there is a target.
            #expect((row["meets_target"] is Bool) == (row["target"] is Double || row["target"] is Int), "\(row)")
        }
        let s7 = try #require(rows.first { $0["id"] as? String == "S7" })
        #expect(s7["baseline"] as? String == "S1")
    }

    @Test(
        "bad arguments are refused with a message and a one-line usage",
        arguments: [
            (["--scale", "zero"], "--scale needs a positive number"),
            (["--target", "S1"], "--target needs a scenario and a positive ratio, as in --target S1=12"),
            (
                ["--only", "S9"],
                "no scenario is called 'S9'; the scenarios are B1, B2, B3, S1, S2, S3, S4, S5, S6, S7, S8"
            ),
            (["--target", "B1=2"], "B1 has no baseline, so no ratio to give a target"),
        ]
    )
    func badArguments(arguments: [String], problem: String) async throws {
        let run = try await offThePool { try Executables.run("dispatch-bench", arguments) }
        #expect(run.status == 64)
        let lines = run.standardError.split(separator: "\n")
        #expect(lines.first == "dispatch-bench: \(problem)"[...])
        #expect(lines.count == 2)
    }

    @Test("the table says what each figure is; a missed target points at its explanation; --check exits 1")
    func missedTarget() async throws {
        // No machine reaches a ratio of a millionth: S1 misses the target given here.
        let missed = try await offThePool {
            try Executables.run(
                "dispatch-bench",
                ["--only", "S1", "--scale", "0.002", "--repetitions", "1", "--check", "--target", "S1=0.000001"],
                timeout: 600
            )
        }
        #expect(missed.status == 1, "\(missed.standardError)")
        let table = missed.standardOutput
        for legend in [
            "ns/op     the median time", "baseline  the scenario", "ratio     the median", "target    the highest",
        ] {
            #expect(table.contains(legend), "\(table)")
        }
        #expect(table.contains("(MISSED, see below)"))
        #expect(table.contains("S1 missed its target: ratio "))
        #expect(
            table.contains(
                #"Why a target is missed, and what was tried: Docs/Performance.md, section "The targets that are missed"."#
            )
        )
        #expect(
            missed.standardError.contains(
                #"dispatch-bench: --check: 1 target missed (S1); see Docs/Performance.md, section "The targets that are missed""#
            )
        )

        // And any machine meets a ratio of a million: then --check exits 0.
        let met = try await offThePool {
            try Executables.run(
                "dispatch-bench",
                ["--only", "S1", "--scale", "0.002", "--repetitions", "1", "--check", "--target", "S1=1000000"],
                timeout: 600
            )
        }
        #expect(met.status == 0, "\(met.standardError)")
        #expect(!met.standardOutput.contains("MISSED"))
        #expect(met.standardError.contains("dispatch-bench: --check: every target was met"))
    }

    @Test("the section the output points at exists in Docs/Performance.md")
    func explanationExists() throws {
        let guide = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Docs/Performance.md")
        let text = try String(contentsOf: guide, encoding: .utf8)
        #expect(text.contains("\n## The targets that are missed\n"))
    }
}
