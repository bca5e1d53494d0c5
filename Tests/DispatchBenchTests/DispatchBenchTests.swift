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
        let scale = ["R1", "R2", "O1", "O2"].flatMap { name in ["1K", "10K", "100K"].map { "\(name)-\($0)" } }
        let journal = ["L1", "L2", "L3B", "L3"]
        let library = ["B1", "B2", "B3", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"]
        let realistic = ["B1r", "B2r", "B3r", "S1r", "S2r", "S3r", "S5r"]
        let decoder = ["L1J", "L2J"]
        let files = ["F1", "K1"]
        // I3 and I3J open a page in headless Chromium, where it is installed.
        let browser = FileManager.default.isExecutableFile(atPath: "/usr/lib/chromium/chromium") ? ["I3", "I3J"] : []
        let inspector = ["I1B", "I1", "I1GB", "I1G", "I2"] + browser + ["I4B", "I4", "I4GB", "I4G"]
        #expect(ids == library + realistic + scale + journal + decoder + files + inspector)
        for row in rows {
            #expect(row["ns_per_op"] is Double || row["ns_per_op"] is Int, "\(row)")
            #expect(row["baseline"] is String, "\(row)")
            #expect(row["ratio"] is Double || row["ratio"] is Int, "\(row)")
            // A verdict exactly where there is a goal: a ratio target, or a limit in time or memory.
            let hasGoal = [row["target"], row["limit_seconds"], row["limit_megabytes"]].contains {
                $0 is Double || $0 is Int
            }
            #expect((row["meets_target"] is Bool) == hasGoal, "\(row)")
        }
        let s7 = try #require(rows.first { $0["id"] as? String == "S7" })
        #expect(s7["baseline"] as? String == "S1")
        // The scenarios on a Document compare with the baselines on a Document.
        let realisticBaselines = realistic.filter { $0.hasPrefix("S") }.map { id in
            rows.first { $0["id"] as? String == id }?["baseline"] as? String
        }
        #expect(realisticBaselines == ["B1r", "B2r", "B3r", "B1r"])
        let l3 = try #require(rows.first { $0["id"] as? String == "L3" })
        #expect(l3["baseline"] as? String == "L3B")
        // The scale rows carry their absolute goals, and a memory reading where they have a memory goal.
        let r1 = try #require(rows.first { $0["id"] as? String == "R1-10K" })
        #expect(r1["limit_seconds"] is Double)
        #expect(r1["limit_megabytes"] as? Double == 50)
        #expect(r1["memory_growth_megabytes"] is Double)
        #expect(r1["meets_target"] is Bool)
    }

    @Test("--only and --target take scenario ids in any case, and --only runs the baselines too")
    func idsInAnyCase() async throws {
        let run = try await offThePool {
            try Executables.run(
                "dispatch-bench",
                ["--only", "s2r", "--target", "S2R=1000000", "--scale", "0.0005", "--repetitions", "1", "--json"],
                timeout: 600
            )
        }
        #expect(run.status == 0, "\(run.standardError)")
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [[String: Any]]
        )
        #expect(rows.compactMap { $0["id"] as? String } == ["B2r", "S2r"])
        #expect(rows.last?["target"] as? Double == 1_000_000)
    }

    @Test(
        "bad arguments are refused with a message and a one-line usage",
        arguments: [
            (["--scale", "zero"], "--scale needs a positive number"),
            (["--target", "S1"], "--target needs a scenario and a positive ratio, as in --target S1=12"),
            (
                ["--only", "S9"],
                "no scenario is called 'S9'; the scenarios are B1, B2, B3, S1, S2, S3, S4, S5, S6, S7, S8, "
                    + "B1r, B2r, B3r, S1r, S2r, S3r, S5r, R1-1K, R1-10K, R1-100K, R2-1K, R2-10K, R2-100K, O1-1K, O1-10K, O1-100K, O2-1K, O2-10K, O2-100K, "
                    + "L1, L2, L3B, L3, L1J, L2J, F1, K1, I1B, I1, I1GB, I1G, I2"
                    + (FileManager.default.isExecutableFile(atPath: "/usr/lib/chromium/chromium") ? ", I3, I3J" : "")
                    + ", I4B, I4, I4GB, I4G"
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
        let line = try #require(table.split(separator: "\n").first { $0.hasPrefix("S1 missed its target: ratio ") })
        #expect(
            line.hasSuffix(
                #", target <= 1e-06. Why, and what was tried: Docs/Performance.md, section "What limits each scenario"."#
            )
        )
        #expect(
            missed.standardError.contains(
                #"dispatch-bench: --check: 1 target missed (S1); see Docs/Performance.md, section "What limits each scenario""#
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
        let text = try String(contentsOf: repositoryFile("Docs/Performance.md"), encoding: .utf8)
        #expect(text.contains("\n## What limits each scenario\n"))
    }
}
