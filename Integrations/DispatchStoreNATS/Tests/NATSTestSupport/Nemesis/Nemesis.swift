import DispatchStore
import DispatchStoreNATS
public import Foundation
import TestSupport

/// Random faults against real servers, checked the way Jepsen checks.
///
/// Three servers (an R3 stream),
/// three replica processes appending at once, and every 1 to 3 seconds one fault: `kill -9` of a
/// server then its restart, `SIGSTOP` of a server for 2 to 6 seconds, `kill -9` of a replica then
/// its restart, `SIGSTOP` of a replica for 2 to 6 seconds. Faults overlap. At the end every fault
/// is healed, the replicas catch up and finish, and ``NemesisChecker`` compares what the replicas
/// were told with what the stream holds and what each replica computed.
///
/// ```swift
/// let report = try await Nemesis.run(seconds: 30, worker: Executables.directory.appendingPathComponent("nats-bench"))
/// #expect(report.violations.isEmpty, "\(report)")
/// ```
public enum Nemesis {
    /// The kinds of fault.
    public enum Fault: String, CaseIterable, Sendable {
        case killServer = "kill -9 a server"
        case pauseServer = "SIGSTOP a server"
        case killReplica = "kill -9 a replica"
        case pauseReplica = "SIGSTOP a replica"
    }

    /// Runs the nemesis for `seconds`, then heals, waits for the replicas and checks.
    ///
    /// - Parameters:
    ///   - seconds: How long faults are injected.
    ///   - worker: The `nats-bench` executable, whose `--nemesis-worker` mode is a replica.
    ///   - seed: The seed of the faults' choices (random when `nil`); the report names it.
    ///   - overlappingServers: Whether a server's fault may come while another server is down or
    ///     paused. `false` by default: a three-server cluster is built to survive the loss of one,
    ///     and with two lost it has no majority (nats-server 2.9.10 was seen to let its copies of the
    ///     stream disagree then). Replicas' faults overlap with everything either way.
    ///   - program: The `nats-server` to run.
    ///   - progress: Hears of each fault as it is injected, for a log.
    /// - Returns: The report, whose ``NemesisReport/violations`` are empty when every check held.
    /// - Throws: ``TestServerError`` when the servers do not start.
    public static func run(
        seconds: Double,
        worker: URL,
        seed: UInt64? = nil,
        overlappingServers: Bool = false,
        program: String = NATSServer.executable,
        progress: @escaping @Sendable (String) -> Void = { _ in }
    ) async throws -> NemesisReport {
        let seed = seed ?? UInt64.random(in: 1...UInt64.max)
        let stream = "NEMESIS"
        let cluster = try await NATSTestCluster.start(nodes: 3, program: program)
        defer { cluster.stop() }
        let replicas = (1...3).map { index in
            NemesisReplicaProcess(
                name: "w\(index)",
                executable: worker,
                servers: cluster.urls,
                stream: stream,
                directory: cluster.directory
            )
        }
        for replica in replicas {
            try replica.start()
        }
        let started = Date()
        let faults = await offThePool {
            injectFaults(
                for: seconds,
                seed: seed,
                overlappingServers: overlappingServers,
                servers: cluster.servers,
                replicas: replicas,
                progress: progress
            )
        }
        let healed = Date()
        // Every server answers, and the stream has a leader, before the replicas are asked to finish.
        for server in cluster.servers {
            try await cluster.waitForJetStream(at: server.url)
        }
        _ = try await cluster.leader(ofStream: stream, seconds: 120)
        // Every replica stops appending first, so that the stream no longer changes while they finish.
        var quiet: [String: Bool] = [:]
        for replica in replicas {
            quiet[replica.name] = await offThePool { replica.quiesce(seconds: 180) }
        }
        var statuses: [String: Int32?] = [:]
        for replica in replicas {
            statuses[replica.name] = await offThePool { replica.terminate(seconds: 180) }
        }
        let finished = Date()
        let connection = try await NATSConnection.connect(to: cluster.urls)
        let exported = try await NemesisChecker.export(stream, from: connection)
        await connection.close()
        var report = NemesisChecker.check(
            logs: replicas.map { ($0.name, $0.log) },
            exported: exported,
            stream: stream,
            from: started,
            to: healed
        )
        report.seed = seed
        report.overlappingServers = overlappingServers
        report.seconds = healed.timeIntervalSince(started)
        report.finishing = finished.timeIntervalSince(healed)
        report.faults = faults
        for replica in replicas {
            // Built with a sanitizer, a replica reports on its own output, not the tests'.
            if replica.printed.contains("WARNING: ThreadSanitizer") {
                report.violations.append(
                    "replica \(replica.name) has ThreadSanitizer reports: \(replica.printed.prefix(4_000))"
                )
            }
            if quiet[replica.name] != true {
                report.violations.append("replica \(replica.name) did not stop appending within 180 s of SIGUSR1")
            }
            switch statuses[replica.name] ?? nil {
            case 0: break
            case let status?:
                // A trap prints "Fatal error: ..." first, then the backtrace.
                let fatal = replica.printed.split(separator: "\n").filter {
                    $0.contains("Fatal error") || $0.contains("rror:")
                }
                report.violations.append(
                    "replica \(replica.name) exited with status \(status): \(fatal.joined(separator: " / "))"
                )
            case nil:
                report.violations.append("replica \(replica.name) did not finish within 180 s of SIGTERM")
            }
        }
        if !report.violations.isEmpty {
            // The replicas' logs and the servers', kept for a person to read.
            let kept = FileManager.default.temporaryDirectory.appendingPathComponent("nemesis-\(seed)")
            try? FileManager.default.removeItem(at: kept)
            try? FileManager.default.copyItem(at: cluster.directory, to: kept)
            let lines = exported.map { "\($0.sequence) \($0.messageID ?? "-") \($0.token ?? "-")" }
            try? (lines.joined(separator: "\n") + "\n").write(
                to: kept.appendingPathComponent("export.txt"),
                atomically: true,
                encoding: .utf8
            )
            report.violations.append("the replicas' and servers' logs are in \(kept.path)")
        }
        return report
    }

    /// Injects a fault every 1 to 3 seconds for `seconds`, each healed after its time.
    ///
    /// Blocks, and returns once every fault is healed: how many of each kind.
    private static func injectFaults(
        for seconds: Double,
        seed: UInt64,
        overlappingServers: Bool,
        servers: [NATSServer],
        replicas: [NemesisReplicaProcess],
        progress: @escaping @Sendable (String) -> Void
    ) -> [Fault: Int] {
        var random = SplitMix64(seed: seed)
        let end = Date().addingTimeInterval(seconds)
        let busy = Shared<Set<String>>([])
        let healing = DispatchGroup()
        var counts: [Fault: Int] = [:]
        let start = Date()
        while true {
            let pause = Double.random(in: 1...3, using: &random)
            guard Date().addingTimeInterval(pause) < end else { break }
            Thread.sleep(forTimeInterval: pause)
            var fault = Fault.allCases.randomElement(using: &random)!
            var onServer = fault == .killServer || fault == .pauseServer
            let serverDown = servers.contains { busy.current.contains($0.name) }
            if onServer && serverDown && !overlappingServers {
                // The cluster's fault model: one server lost at a time. A replica's fault instead.
                fault = [Fault.killReplica, .pauseReplica].randomElement(using: &random)!
                onServer = false
            }
            let names = onServer ? servers.map(\.name) : replicas.map(\.name)
            let free = names.filter { !busy.current.contains($0) }
            guard let target = free.randomElement(using: &random) else { continue }
            let duration =
                fault == .killServer || fault == .killReplica
                ? Double.random(in: 0.5...3, using: &random) : Double.random(in: 2...6, using: &random)
            busy.withLock { _ = $0.insert(target) }
            counts[fault, default: 0] += 1
            progress(
                String(
                    format: "%6.1f s: %@ (%@) for %.1f s",
                    Date().timeIntervalSince(start),
                    fault.rawValue,
                    target,
                    duration
                )
            )
            let server = servers.first { $0.name == target }
            let replica = replicas.first { $0.name == target }
            healing.enter()
            let chosen = fault
            Thread.detachNewThread {
                defer {
                    busy.withLock { _ = $0.remove(target) }
                    healing.leave()
                }
                switch chosen {
                case .killServer:
                    server?.kill()
                    Thread.sleep(forTimeInterval: duration)
                    try? server?.start()
                    try? server?.waitUntilListening()
                case .pauseServer:
                    server?.pause()
                    Thread.sleep(forTimeInterval: duration)
                    server?.resume()
                case .killReplica:
                    replica?.kill()
                    Thread.sleep(forTimeInterval: duration)
                    try? replica?.start()
                case .pauseReplica:
                    replica?.pause()
                    Thread.sleep(forTimeInterval: duration)
                    replica?.resume()
                }
            }
        }
        healing.wait()
        return counts
    }
}

/// A small seeded generator (SplitMix64), so that a run's faults can be chosen again from its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var value = state
        value = (value ^ (value >> 30)) &* 0xbf58_476d_1ce4_e5b9
        value = (value ^ (value >> 27)) &* 0x94d0_49bb_1331_11eb
        return value ^ (value >> 31)
    }
}
