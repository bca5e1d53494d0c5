import DispatchStore
import DispatchStoreNATS
public import Foundation
import TestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `nats-server` the tests start on 127.0.0.1, on free ports, with JetStream in a directory of its
/// own, and stop by its process id.
public final class NATSServer: @unchecked Sendable {
    // @unchecked: `process` is only touched while holding `lock`.

    /// The server's name in its cluster (`n1`, ...).
    public let name: String
    /// The port clients connect to.
    public let port: Int
    /// The URL clients connect to: `nats://127.0.0.1:PORT`.
    public var url: String { "nats://127.0.0.1:\(port)" }
    private let configuration: URL
    /// Where the logs go: `<name>-<start>.log`, one file per start.
    private let logDirectory: URL
    private let lock = NSLock()
    private var process: Process?
    private var starts = 0
    /// Kills the server when this process dies without stopping it (a crash, a signal): it waits
    /// on a pipe whose writing end only this process holds.
    private var watcher: (process: Process, pipe: Pipe)?

    /// The `nats-server` program this server runs.
    let program: String

    init(name: String, port: Int, configuration: URL, logDirectory: URL, program: String = NATSServer.executable) {
        self.program = program
        self.name = name
        self.port = port
        self.configuration = configuration
        self.logDirectory = logDirectory
    }

    /// The log of the latest start.
    public var logFile: URL {
        lock.lock()
        defer { lock.unlock() }
        return logDirectory.appendingPathComponent("\(name)-\(starts).log")
    }

    /// The running server's process id, or `nil` when it is not running.
    public var processIdentifier: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return process.map(\.processIdentifier)
    }

    /// Starts the server (again, after ``kill()`` or ``stop()``, with the same ports and directory).
    public func start() throws {
        lock.lock()
        starts += 1
        lock.unlock()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = ["-c", configuration.path, "-l", logFile.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let watcher = watchdog(killing: process.processIdentifier)
        lock.lock()
        self.process = process
        self.watcher = watcher
        lock.unlock()
        NATSServer.running.withLock { _ = $0.insert(process.processIdentifier) }
        NATSServer.stopsAtExit
    }

    /// Waits until this server, not another process that took the port meanwhile, is ready.
    ///
    /// Its own log says so, and it still runs: a server that cannot take its ports exits.
    public func waitUntilListening(seconds: Double = 60) throws {
        let deadline = Date().addingTimeInterval(seconds)
        let log = logFile
        while true {
            lock.lock()
            let running = process?.isRunning ?? false
            lock.unlock()
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            guard running, Date() < deadline else {
                throw TestServerError(
                    "nats-server \(name) is not ready on port \(port) after \(seconds) s or exited; see \(log.path)"
                )
            }
            if text.contains("Server is ready") && NATSServer.accepts(port: port) { return }
            usleep(20_000)
        }
    }

    /// Sends `SIGKILL` (`kill -9`) and waits for the process to end.
    public func kill() {
        end(signal: SIGKILL)
    }

    /// Stops the server with `SIGTERM`, then `SIGKILL` if it has not exited within 10 seconds.
    public func stop() {
        end(signal: SIGTERM)
    }

    /// Pauses the server with `SIGSTOP`: it keeps its sockets but answers nothing.
    ///
    /// Returns once every thread of the server has stopped (the signal takes effect a moment after
    /// `kill` returns).
    public func pause() {
        guard let pid = processIdentifier else { return }
        send(SIGSTOP, to: pid)
        #if os(Linux)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && !NATSServer.isStopped(pid) {
            usleep(1_000)
        }
        #endif
    }

    #if os(Linux)
    /// Whether every thread of the process `pid` is stopped, as `/proc` says.
    static func isStopped(_ pid: Int32) -> Bool {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return !tasks.isEmpty
            && tasks.allSatisfy { task in
                guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                    let end = text.lastIndex(of: ")")
                else { return false }
                // The state is the first field after the command's closing parenthesis.
                let state = text[text.index(end, offsetBy: 2)...].prefix(1)
                return state == "T" || state == "t"
            }
    }
    #endif

    /// Resumes a paused server with `SIGCONT`.
    public func resume() {
        if let pid = processIdentifier { send(SIGCONT, to: pid) }
    }

    private func end(signal number: Int32) {
        lock.lock()
        let process = self.process
        let watcher = self.watcher
        self.process = nil
        self.watcher = nil
        lock.unlock()
        stopWatchdog(watcher)
        guard let process else { return }
        let pid = process.processIdentifier
        send(SIGCONT, to: pid)
        send(number, to: pid)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline {
            usleep(10_000)
        }
        if process.isRunning {
            send(SIGKILL, to: pid)
            process.waitUntilExit()
        }
        NATSServer.running.withLock { _ = $0.remove(pid) }
    }

    // MARK: Shared

    /// The process ids of the servers running, killed when the test process exits (a test that
    /// fails before its own `stop()` leaves no server behind).
    static let running = Shared<Set<Int32>>([])

    /// Registers, once, the handler that kills the servers still running when the process exits.
    private static let stopsAtExit: Void = {
        atexit {
            for pid in NATSServer.running.current {
                send(SIGCONT, to: pid)
                send(SIGKILL, to: pid)
            }
        }
    }()

    /// The `nats-server` to run: `$NATS_SERVER`, or the first found on `PATH`, `/usr/sbin`, `/usr/bin`.
    public static var executable: String {
        if let path = ProcessInfo.processInfo.environment["NATS_SERVER"] { return path }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates =
            path.split(separator: ":").map { "\($0)/nats-server" } + [
                "/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server",
            ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? "nats-server"
    }

    /// A `nats-server` 2.10 or newer: `DISPATCHSTORE_NEMESIS_SERVER`, or ``executable`` when it is one;
    /// `nil` when there is none.
    ///
    /// nats-server 2.9 (Debian 12's) can deliver a message to a reader before its stream commits it,
    /// and then lose it: when a leader is killed, or paused with a publish on its way and resumed
    /// (Docs/Replication.md). The nemesis and the tests that pause a leader run on a current server.
    public static let current: String? = {
        if let path = ProcessInfo.processInfo.environment["DISPATCHSTORE_NEMESIS_SERVER"] { return path }
        guard let (major, minor, _) = version(of: executable) else { return nil }
        return (major, minor) >= (2, 10) ? executable : nil
    }()

    /// Whether the tests that need ``current`` must run (`DISPATCHSTORE_REQUIRE_NEMESIS`, as CI sets
    /// it) rather than be skipped.
    public static let currentRequired = ProcessInfo.processInfo.environment["DISPATCHSTORE_REQUIRE_NEMESIS"] != nil

    /// The version a `nats-server` program says it is: `(2, 9, 10)` for `nats-server: v2.9.10`.
    public static func version(of program: String) -> (Int, Int, Int)? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = ["--version"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard let start = text.range(of: "v")?.upperBound else { return nil }
        let numbers = text[start...].prefix { $0.isNumber || $0 == "." }.split(separator: ".").compactMap { Int($0) }
        guard numbers.count >= 3 else { return nil }
        return (numbers[0], numbers[1], numbers[2])
    }

    /// A port nothing listens on now, on 127.0.0.1.
    public static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestServerError("socket() failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else { throw TestServerError("bind() failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on `port` of 127.0.0.1.
    static func accepts(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                connect(descriptor, generic, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// Sends signal `number` to the process `pid` (`kill(2)`, which `NATSServer.kill()` hides).
func send(_ number: Int32, to pid: Int32) {
    _ = kill(pid, number)
}

/// A process that kills the process `pid` (`kill -9`) when this one dies without stopping it (a
/// crash, a signal): it waits on a pipe whose writing end only this process holds.
///
/// - Returns: The watchdog and its pipe, to be kept while `pid` runs; `nil` when it did not start.
func watchdog(killing pid: Int32) -> (process: Process, pipe: Pipe)? {
    let pipe = Pipe()
    let watcher = Process()
    watcher.executableURL = URL(fileURLWithPath: "/bin/sh")
    watcher.arguments = ["-c", "read _; kill -9 \(pid) 2>/dev/null"]
    watcher.standardInput = pipe
    watcher.standardOutput = FileHandle.nullDevice
    watcher.standardError = FileHandle.nullDevice
    try? watcher.run()
    return watcher.isRunning ? (watcher, pipe) : nil
}

/// Stops a watchdog made by ``watchdog(killing:)`` without letting it kill anything: its process
/// ends before the pipe closes.
func stopWatchdog(_ watcher: (process: Process, pipe: Pipe)?) {
    guard let watcher else { return }
    send(SIGKILL, to: watcher.process.processIdentifier)
    watcher.process.waitUntilExit()
}

/// A test server that would not start.
public struct TestServerError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// Creates the error.
    public init(_ description: String) {
        self.description = description
    }
}
