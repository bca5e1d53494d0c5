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
        #expect(ids == ["B1", "B2", "B3", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"] + scale + journal)
        for row in rows {
            #expect(row["ns_per_op"] is Double || row["ns_per_op"] is Int, "\(row)")
            #expect(row["baseline"] is String, "\(row)")
            #expect(row["ratio"] is Double || row["ratio"] is Int, "\(row)")
        }
        let s7 = try #require(rows.first { $0["id"] as? String == "S7" })
        #expect(s7["baseline"] as? String == "S1")
        let l3 = try #require(rows.first { $0["id"] as? String == "L3" })
        #expect(l3["baseline"] as? String == "L3B")
        // The scale rows carry their absolute goals, and a memory reading where they have a memory goal.
        let r1 = try #require(rows.first { $0["id"] as? String == "R1-10K" })
        #expect(r1["limit_seconds"] is Double)
        #expect(r1["limit_megabytes"] as? Double == 50)
        #expect(r1["memory_growth_megabytes"] is Double)
        #expect(r1["meets_target"] is Bool)
    }

    @Test("bad arguments are refused with a message")
    func badArguments() async throws {
        let run = try await offThePool { try Executables.run("dispatch-bench", ["--scale", "zero"]) }
        let message = run.standardError
        #expect(run.status == 64)
        #expect(message.contains("--scale needs a positive number"))
    }
}
