import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A nemesis replica's process (``NemesisWorker``), started, killed, paused and stopped by its
/// process id; every start appends to the same log.
final class NemesisReplicaProcess: @unchecked Sendable {
    // @unchecked: `process`, `watcher` and `launchOffset` are only touched holding `lock`.

    let name: String
    let log: URL
    private let executable: URL
    private let arguments: [String]
    private let output: URL
    private let lock = NSLock()
    private var process: Process?
    private var watcher: (process: Process, pipe: Pipe)?
    /// The size of the log when the process was last started: what follows is the new process's.
    private var launchOffset = 0

    init(name: String, executable: URL, servers: [String], stream: String, directory: URL) {
        self.name = name
        self.executable = executable
        log = directory.appendingPathComponent("\(name).jsonl")
        output = directory.appendingPathComponent("\(name).out")
        arguments = NemesisWorker.arguments(name: name, servers: servers, stream: stream, log: log.path)
    }

    /// Starts the process (again).
    func start() throws {
        if !FileManager.default.fileExists(atPath: output.path) {
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        }
        let handle = try FileHandle(forWritingTo: output)
        handle.seekToEndOfFile()
        let offset = (try? FileManager.default.attributesOfItem(atPath: log.path)[.size] as? Int) ?? 0
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let watcher = watchdog(killing: process.processIdentifier)
        lock.lock()
        self.process = process
        self.watcher = watcher
        launchOffset = offset
        lock.unlock()
    }

    /// `kill -9`, then waits for the process to end.
    func kill() {
        guard let process = take() else { return }
        send(SIGCONT, to: process.processIdentifier)
        send(SIGKILL, to: process.processIdentifier)
        process.waitUntilExit()
    }

    /// `SIGSTOP`: the process keeps its sockets and does nothing.
    func pause() {
        guard let pid = processIdentifier else { return }
        send(SIGSTOP, to: pid)
        #if os(Linux)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && !NATSServer.isStopped(pid) {
            usleep(1_000)
        }
        #endif
    }

    /// `SIGCONT`.
    func resume() {
        if let pid = processIdentifier { send(SIGCONT, to: pid) }
    }

    /// `SIGUSR1`: the worker stops appending, and logs that it is quiet once every append of its ended.
    ///
    /// Returns once it did, or after `seconds`. A worker restarted a moment before is first waited
    /// for until it logged its start (after the size its log had at the launch): before its handler is in place, SIGUSR1 would end it (it did,
    /// under the thread sanitizer) or be lost (a worker then appended for three minutes). The signal
    /// is sent again every second until the worker is quiet.
    ///
    /// - Returns: Whether it logged it in time.
    func quiesce(seconds: Double) -> Bool {
        guard let pid = processIdentifier else { return false }
        send(SIGCONT, to: pid)
        let offset = lock.withLock { launchOffset }
        let deadline = Date().addingTimeInterval(seconds)
        var nextSignal: Date?
        // Another process's file: read it again until the line is there.
        while Date() < deadline {
            let bytes = (try? Data(contentsOf: log)) ?? Data()
            let sinceLaunch = String(decoding: bytes.dropFirst(offset), as: UTF8.self)
            if sinceLaunch.contains("\"op\":\"quiet\"") { return true }
            if let next = nextSignal, Date() >= next {
                send(SIGUSR1, to: pid)
                nextSignal = Date().addingTimeInterval(1)
            } else if nextSignal == nil, sinceLaunch.contains("\"op\":\"start\"") {
                nextSignal = Date()
                continue
            }
            usleep(50_000)
        }
        return false
    }

    /// `SIGTERM`: the worker catches up, logs its final state and exits; `kill -9` after `seconds`.
    ///
    /// - Returns: Its exit status, or `nil` when it had to be killed.
    func terminate(seconds: Double) -> Int32? {
        guard let process = take() else { return nil }
        send(SIGCONT, to: process.processIdentifier)
        send(SIGTERM, to: process.processIdentifier)
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline {
            usleep(20_000)
        }
        guard !process.isRunning else {
            send(SIGKILL, to: process.processIdentifier)
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    /// What the process wrote on its standard output and error, over every run.
    var printed: String {
        (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    }

    private var processIdentifier: Int32? {
        lock.lock()
        defer { lock.unlock() }
        return process.map(\.processIdentifier)
    }

    /// The process, no longer this object's, and its watchdog stopped.
    private func take() -> Process? {
        lock.lock()
        let process = self.process
        let watcher = self.watcher
        self.process = nil
        self.watcher = nil
        lock.unlock()
        stopWatchdog(watcher)
        return process
    }
}
