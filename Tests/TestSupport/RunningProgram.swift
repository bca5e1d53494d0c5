public import Foundation

#if canImport(Glibc)
import DispatchStore
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A package executable running as a subprocess, driven step by step: write to its standard input
/// while it runs, read its standard error line by line as it comes, send it signals.
public final class RunningProgram: @unchecked Sendable {
    // @unchecked: the collected output is in `Shared` values; the process is only driven from the
    // test's thread.
    private let process = Process()
    private let input = Pipe()
    private let errorLines = Shared<(lines: [String], partial: Data, next: Int, ended: Bool)>(([], Data(), 0, false))
    private let lineArrived = DispatchSemaphore(value: 0)
    private let output = Shared(Data())
    private let readers = DispatchGroup()
    private let exited = DispatchSemaphore(value: 0)

    /// Starts `name` (a product built next to the tests) with `arguments`.
    public init(_ name: String, _ arguments: [String] = []) throws {
        // Writing to a program that exited must fail with EPIPE, not kill the tests.
        signal(SIGPIPE, SIG_IGN)
        process.executableURL = Executables.directory.appendingPathComponent(name)
        process.arguments = arguments
        let standardOutput = Pipe()
        let standardError = Pipe()
        process.standardInput = input
        process.standardOutput = standardOutput
        process.standardError = standardError
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        readers.enter()
        Thread.detachNewThread { [output, readers] in
            let data = standardOutput.fileHandleForReading.readDataToEndOfFile()
            output.withLock { $0 = data }
            readers.leave()
        }
        readers.enter()
        Thread.detachNewThread { [errorLines, lineArrived, readers] in
            let handle = standardError.fileHandleForReading
            while true {
                let chunk = handle.availableData
                let count = errorLines.withLock { state -> Int in
                    if chunk.isEmpty {
                        state.ended = true
                        if !state.partial.isEmpty {
                            state.lines.append(String(decoding: state.partial, as: UTF8.self))
                            state.partial = Data()
                            return 2
                        }
                        return 1
                    }
                    state.partial.append(chunk)
                    var added = 0
                    while let newline = state.partial.firstIndex(of: UInt8(ascii: "\n")) {
                        state.lines.append(String(decoding: state.partial[..<newline], as: UTF8.self))
                        state.partial = Data(state.partial[state.partial.index(after: newline)...])
                        added += 1
                    }
                    return added
                }
                for _ in 0..<count { lineArrived.signal() }
                if chunk.isEmpty { break }
            }
            readers.leave()
        }
    }

    /// The program's process id.
    public var processIdentifier: Int32 {
        process.processIdentifier
    }

    /// Writes `data` to the program's standard input.
    ///
    /// - Returns: `false` when the program no longer reads it (it exited).
    @discardableResult
    public func write(_ data: Data) -> Bool {
        writeAll(data, to: input.fileHandleForWriting.fileDescriptor)
    }

    /// Closes the program's standard input (end of input).
    public func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// The next line the program writes to standard error, waiting for it; `nil` when the program
    /// closed standard error or `seconds` passed (a bound for failing, not a timing: under
    /// ThreadSanitizer on two busy cores a program may take minutes).
    public func nextErrorLine(seconds: Double = 600) -> String? {
        let deadline = DispatchTime.now() + seconds
        while true {
            let line: String?? = errorLines.withLock { state in
                if state.next < state.lines.count {
                    state.next += 1
                    return .some(state.lines[state.next - 1])
                }
                return state.ended ? .some(nil) : nil
            }
            if let line { return line }
            if lineArrived.wait(timeout: deadline) == .timedOut { return nil }
        }
    }

    /// Sends `number` to the program.
    public func send(signal number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for the program to exit (killing it after `seconds`, a bound for failing, as in
    /// ``nextErrorLine(seconds:)``) and returns all it wrote.
    public func wait(seconds: Double = 600) -> Executables.Output {
        let timedOut = exited.wait(timeout: .now() + seconds) == .timedOut
        if timedOut {
            process.terminate()
            exited.wait()
        }
        readers.wait()
        closeInput()
        return Executables.Output(
            status: process.terminationStatus,
            standardOutput: String(decoding: output.current, as: UTF8.self),
            standardError: errorLines.current.lines.joined(separator: "\n"),
            timedOut: timedOut
        )
    }
}
