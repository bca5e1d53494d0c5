import Foundation
import TestSupport
import Testing

@Suite("The benchmark program")
struct DispatchBenchTests {
    @Test("a quick run checks every scenario's result and reports JSON with id, ns_per_op, baseline and ratio")
    func quickRun() throws {
        let process = Process()
        process.executableURL = Executables.directory.appendingPathComponent("dispatch-bench")
        process.arguments = ["--scale", "0.002", "--repetitions", "1", "--json"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(problems)")

        let rows = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        let ids = rows.compactMap { $0["id"] as? String }
        #expect(ids == ["B1", "B2", "B3", "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8"])
        for row in rows {
            #expect(row["ns_per_op"] is Double || row["ns_per_op"] is Int, "\(row)")
            #expect(row["baseline"] is String, "\(row)")
            #expect(row["ratio"] is Double || row["ratio"] is Int, "\(row)")
        }
        let s7 = try #require(rows.first { $0["id"] as? String == "S7" })
        #expect(s7["baseline"] as? String == "S1")
    }

    @Test("bad arguments are refused with a message")
    func badArguments() throws {
        let process = Process()
        process.executableURL = Executables.directory.appendingPathComponent("dispatch-bench")
        process.arguments = ["--scale", "zero"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = Pipe()
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 64)
        #expect(message.contains("--scale needs a positive number"))
    }
}
