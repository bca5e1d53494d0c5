import DispatchStore
import Foundation
import TestSupport
import Testing

/// What a run of `todo` did.
struct ProgramOutput {
    /// The exit status.
    var status: Int32
    /// All it wrote to standard output.
    var standardOutput: String
    /// All it wrote to standard error.
    var standardError: String
}

/// Runs the built `todo` with `arguments`, with `input` as its standard input.
///
/// The input comes from a file, not a pipe: a program that exits without reading it (a bad
/// argument, a corrupt list) must not make writing it fail with EPIPE, which `FileHandle.write`
/// turns into a crash of the test process.
func runTodo(
    _ arguments: [String],
    input: String = "",
    environment: [String: String] = [:],
    timeout: TimeInterval = 600
) async throws -> ProgramOutput {
    let output = try await offThePool { () throws -> ProgramOutput in
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let inputFile = directory.file("input")
        try Data(input.utf8).write(to: inputFile)
        let process = Process()
        process.executableURL = Executables.directory.appendingPathComponent("todo")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        let pipes = [Pipe(), Pipe()]
        process.standardOutput = pipes[0]
        process.standardError = pipes[1]
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        let collected = Shared<[Int: Data]>([:])
        let readers = DispatchGroup()
        for (index, pipe) in pipes.enumerated() {
            readers.enter()
            Thread.detachNewThread {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.withLock { $0[index] = data }
                readers.leave()
            }
        }
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            exited.wait()
        }
        readers.wait()
        let data = collected.current
        return ProgramOutput(
            status: process.terminationStatus,
            standardOutput: String(decoding: data[0] ?? Data(), as: UTF8.self),
            standardError: String(decoding: data[1] ?? Data(), as: UTF8.self)
        )
    }
    // Under `swift test --sanitize=thread` the program is instrumented too; its reports go to
    // its standard error, which the runner's own check does not see.
    #expect(!output.standardError.contains("Sanitizer"), "todo reported:\n\(output.standardError)")
    return output
}
