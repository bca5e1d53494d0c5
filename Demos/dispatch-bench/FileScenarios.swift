import DispatchStore
import DispatchStoreJournal
import Foundation

#if canImport(Glibc)
import Glibc
#endif

// F1: the slowest bad file, one that never ends a line. Readers refuse it once they have read
// ActionLog.maximumLineLength (64 MiB) of it; opening it to append looks that far back for a
// newline. The goal is the file contract's (Docs/LinuxServices.md): an answer within a second, and
// memory that does not grow with the file.

func fileScenarios(scale: Double) -> [Scenario] {
    var scenario = Scenario(
        id: "F1",
        summary: "answer 4 bad files that never end a line: read, replay and append to a 1 GiB line, read "
            + "/dev/zero (goals: under 1 s in all, memory growth under 100 MB)",
        operations: 4,
        baseline: nil,
        target: nil,
        limit: Scenario.Limit(seconds: 1, megabytes: 100)
    ) {
        let path = benchDirectory().appendingPathComponent("huge-line-\(UUID().uuidString).jsonl").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(#"{"id":1,"payload":""#.utf8))
        // A line of 1 GiB with no newline, stored sparsely.
        precondition(truncate(path, 1 << 30) == 0, "dispatch-bench: cannot make \(path) 1 GiB long")
        let memory = MemoryProbe()
        var answers: [String] = []
        return Repetition(
            run: {
                memory.start(trimming: false)
                answers = [
                    answer { _ = try ActionLog.read(contentsOf: path, actionTypes: [LedgerEntry.self]) },
                    answer {
                        let (dispatcher, _) = ledgerDispatcher()
                        try ActionLog.replay(contentsOf: path, into: dispatcher, actionTypes: [LedgerEntry.self])
                    },
                    answer { _ = try ActionLogMiddleware(path: path) },
                    answer { _ = try ActionLog.read(contentsOf: "/dev/zero", actionTypes: [LedgerEntry.self]) },
                ]
                memory.stop()
            },
            check: {
                defer { try? FileManager.default.removeItem(atPath: path) }
                let expected = ["unreadableFile", "unreadableFile", "malformedLine", "unreadableFile"]
                return answers == expected ? nil : "the answers were \(answers), not \(expected)"
            },
            notes: { memory.notes },
            memoryGrowth: { memory.peakGrowth }
        )
    }
    scenario.showsTotal = true
    return [scenario]
}

/// The code of the `ActionLogError` that `body` throws, or what went otherwise.
private func answer(_ body: () throws -> Void) -> String {
    do {
        try body()
        return "no error"
    } catch let error as ActionLogError {
        return error.code.description
    } catch {
        return "\(error)"
    }
}
