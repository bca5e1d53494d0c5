import Foundation

/// A value shared between test threads.
final class Shared<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched while holding `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value {
        withLock { $0 }
    }
}

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("todo-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// The directory holding the built products (the `todo` executable sits next to the test bundle).
var productsDirectory: URL {
    #if os(macOS)
    for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
        return bundle.bundleURL.deletingLastPathComponent()
    }
    return Bundle.main.bundleURL.deletingLastPathComponent()
    #else
    return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
    #endif
}

struct ProgramOutput {
    var status: Int32
    var standardOutput: String
    var standardError: String
}

/// Runs the built `todo` with `arguments`, piping `input` to it.
func runTodo(
    _ arguments: [String],
    input: String = "",
    environment: [String: String] = [:],
    timeout: TimeInterval = 60
) throws -> ProgramOutput {
    let process = Process()
    process.executableURL = productsDirectory.appendingPathComponent("todo")
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
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
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
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
