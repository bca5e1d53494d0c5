public import Foundation

#if canImport(Glibc)
import DispatchStore
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs the package's executables (built next to the test bundle) as subprocesses.
public enum Executables {
    /// The directory holding the built products.
    public static var directory: URL {
        #if os(macOS)
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            return bundle.bundleURL.deletingLastPathComponent()
        }
        return Bundle.main.bundleURL.deletingLastPathComponent()
        #else
        return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        #endif
    }

    /// What a program did.
    public struct Output: Sendable {
        /// Its exit status.
        public var status: Int32
        /// All it wrote to standard output.
        public var standardOutput: String
        /// All it wrote to standard error.
        public var standardError: String
        /// Whether it had to be killed after the timeout.
        public var timedOut: Bool
    }

    /// Runs `name` with `arguments`, feeding it `input`, and waits at most `timeout` for it to exit.
    ///
    /// With `standardOutputPath` (`/dev/full`, for example), standard output goes to that file
    /// instead of being collected.
    public static func run(
        _ name: String,
        _ arguments: [String] = [],
        input: Data? = nil,
        environment: [String: String]? = nil,
        standardOutputPath: String? = nil,
        timeout: TimeInterval = 600
    ) throws -> Output {
        let process = Process()
        process.executableURL = directory.appendingPathComponent(name)
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = stdin
        if let standardOutputPath {
            guard let file = FileHandle(forWritingAtPath: standardOutputPath) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: standardOutputPath])
            }
            process.standardOutput = file
            try? stdout.fileHandleForWriting.close()
        } else {
            process.standardOutput = stdout
        }
        process.standardError = stderr
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()

        let collected = Shared<[Int: Data]>([:])
        let readers = DispatchGroup()
        for (index, pipe) in [stdout, stderr].enumerated() {
            readers.enter()
            Thread.detachNewThread {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                collected.withLock { $0[index] = data }
                readers.leave()
            }
        }
        // A program may exit before it reads all its input: the write then fails with EPIPE (where
        // FileHandle.write would trap), and the test reads what the program did.
        signal(SIGPIPE, SIG_IGN)
        Thread.detachNewThread {
            if let input { _ = writeAll(input, to: stdin.fileHandleForWriting.fileDescriptor) }
            try? stdin.fileHandleForWriting.close()
        }
        let timedOut = exited.wait(timeout: .now() + timeout) == .timedOut
        if timedOut {
            process.terminate()
            exited.wait()
        }
        readers.wait()
        let data = collected.current
        return Output(
            status: process.terminationStatus,
            standardOutput: String(decoding: data[0] ?? Data(), as: UTF8.self),
            standardError: String(decoding: data[1] ?? Data(), as: UTF8.self),
            timedOut: timedOut
        )
    }
}

/// Writes all of `data` to `descriptor`, retrying short and interrupted writes.
///
/// - Returns: `false` when a write failed (the reader closed its end: `EPIPE`).
func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
    data.withUnsafeBytes { bytes in
        var offset = 0
        while offset < bytes.count {
            let written = writeBytes(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}

/// `write(2)`, callable where a method named `write` hides it.
private func writeBytes(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
