import DispatchStore
import DispatchStoreNATS
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A replica the nemesis runs as a process of its own (`nats-bench --nemesis-worker ...`).
///
/// It replicates a ``NemesisLedger`` through the stream, appends actions with tokens of its own from a
/// few tasks at once, and logs what it was told (``NemesisEvent``). On SIGUSR1 it stops appending
/// and logs that it is quiet once every append of its ended; on SIGTERM (sent once every replica is
/// quiet, so that the stream no longer changes) it catches up, logs its final state and exits 0. A
/// failure that stops its replica makes it exit 1.
public enum NemesisWorker {
    /// The command line: `--nemesis-worker NAME --servers URL,URL --stream NAME --log PATH`.
    public static func arguments(name: String, servers: [String], stream: String, log: String) -> [String] {
        ["--nemesis-worker", name, "--servers", servers.joined(separator: ","), "--stream", stream, "--log", log]
    }

    /// Runs the worker named by `arguments` (as ``arguments(name:servers:stream:log:)`` makes them).
    public static func main(_ arguments: [String]) async -> Never {
        var options: [String: String] = [:]
        var remaining = arguments[...]
        while let key = remaining.popFirst(), let value = remaining.popFirst() {
            options[key] = value
        }
        guard let name = options["--nemesis-worker"], let servers = options["--servers"],
            let stream = options["--stream"], let path = options["--log"]
        else {
            FileHandle.standardError.write(Data("nemesis worker: bad arguments \(arguments)\n".utf8))
            exit(64)
        }
        let log = EventLog(path: path)
        let run = log.startsSoFar + 1
        let stopping = Locked(false)
        let finishing = DispatchSemaphore(value: 0)
        signal(SIGUSR1, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let quiesce = DispatchSource.makeSignalSource(signal: SIGUSR1)
        quiesce.setEventHandler { stopping.withLock { $0 = true } }
        quiesce.activate()
        let terminate = DispatchSource.makeSignalSource(signal: SIGTERM)
        terminate.setEventHandler {
            stopping.withLock { $0 = true }
            finishing.signal()
        }
        terminate.activate()
        let replica = await start(
            name: name,
            servers: servers.split(separator: ",").map(String.init),
            stream: stream,
            log: log,
            run: run
        )
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<3 {
                group.addTask {
                    await append(replica.replication, prefix: "\(name).\(run).\(task)", log: log, stopping: stopping)
                }
            }
        }
        if let failure = replica.replication.failure {
            log.write(
                event(.stopped) {
                    $0.code = "\(failure.code)"
                    $0.error = failure.message
                }
            )
            exit(1)
        }
        log.write(event(.quiet) { $0.run = run })
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                finishing.wait()
                done.resume()
            }
        }
        _ = try? await replica.replication.waitUntilCaughtUp(timeout: .seconds(120))
        let lag = replica.replication.lag
        log.write(
            event(.final) {
                $0.run = run
                $0.sequence = lag.appliedSequence
                $0.digest = replica.ledger.state.digest
                $0.behind = lag.behind
            }
        )
        await replica.replication.close()
        exit(0)
    }

    /// A dispatcher with the ledger, replicated.
    private struct Replica {
        let ledger: Store<NemesisLedger, NemesisAction>
        let replication: Replication
    }

    /// Starts the replica, trying again every second while the cluster cannot be used.
    private static func start(name: String, servers: [String], stream: String, log: EventLog, run: Int) async -> Replica
    {
        while true {
            // A store of its own for each attempt: a failed start may have loaded a snapshot.
            let dispatcher = Dispatcher()
            let ledger = Store<NemesisLedger, NemesisAction>(identifier: "ledger", reducer: NemesisLedgerReducer())
            try? dispatcher.register(store: ledger)
            var configuration = Replication.Configuration(servers: servers, stream: stream)
            configuration.replicaName = name
            configuration.snapshotEvery = 50
            let previous = Locked<UInt64?>(nil)
            do {
                let replication = try await Replication(
                    dispatcher: dispatcher,
                    stores: [ledger],
                    configuration: configuration,
                    onApply: { applied in
                        let before = previous.withLock { previous in
                            defer { previous = applied.sequence }
                            return previous
                        }
                        if let before, applied.sequence != before + 1 {
                            log.write(
                                event(.violation) {
                                    $0.sequence = applied.sequence
                                    $0.expected = before + 1
                                }
                            )
                        } else if before == nil {
                            log.write(
                                event(.first) {
                                    $0.run = run
                                    $0.sequence = applied.sequence
                                }
                            )
                        }
                        if applied.sequence % 10 == 0 {
                            log.write(
                                event(.checkpoint) {
                                    $0.sequence = applied.sequence
                                    $0.digest = ledger.state.digest
                                }
                            )
                        }
                    },
                    onError: { error in
                        log.write(
                            event(.error) {
                                $0.code = "\(error.code)"
                                $0.error = error.message
                            }
                        )
                    }
                )
                let catchUp = replication.catchUp
                log.write(
                    event(.start) {
                        $0.run = run
                        $0.snapshot = catchUp.snapshotSequence
                        $0.sequence = catchUp.lastSequence
                    }
                )
                return Replica(ledger: ledger, replication: replication)
            } catch {
                log.write(
                    event(.startFailed) {
                        $0.run = run
                        $0.code = "\(error.code)"
                        $0.error = error.message
                    }
                )
                try? await Task.sleep(for: .seconds(1))
            }
        }
    }

    /// Appends actions one after the other until SIGTERM or the replica's failure.
    private static func append(_ replication: Replication, prefix: String, log: EventLog, stopping: Locked<Bool>) async
    {
        var number = 0
        while !stopping.withLock({ $0 }), replication.failure == nil {
            number += 1
            let token = "\(prefix).\(number)"
            log.write(event(.invoke) { $0.token = token })
            do {
                let outcome = try await replication.perform(NemesisAction.mix(token: token))
                log.write(
                    event(.ok) {
                        $0.token = token
                        $0.sequence = outcome.sequence
                    }
                )
                try? await Task.sleep(for: .milliseconds(10))
            } catch {
                log.write(
                    event(.fail) {
                        $0.token = token
                        $0.code = "\(error.code)"
                        $0.error = error.message
                    }
                )
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    private static func event(_ op: NemesisEvent.Operation, _ fill: (inout NemesisEvent) -> Void) -> NemesisEvent {
        var event = NemesisEvent(op)
        fill(&event)
        return event
    }
}

/// A nemesis replica's log: one JSON line per event, appended with one `write` each, so that a
/// process killed at any moment leaves whole lines.
final class EventLog: Sendable {
    private let path: String
    private let descriptor: Int32
    private let lock = NSLock()

    init(path: String) {
        self.path = path
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        precondition(descriptor >= 0, "nemesis worker: cannot open its log \(path): errno \(errno)")
    }

    /// How many times the worker started before (or tried to), as its log says.
    var startsSoFar: Int {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            try? JSONDecoder().decode(NemesisEvent.self, from: Data(line.utf8)).run
        }.max() ?? 0
    }

    func write(_ event: NemesisEvent) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        var line = (try? encoder.encode(event)) ?? Data()
        line.append(UInt8(ascii: "\n"))
        lock.lock()
        defer { lock.unlock() }
        writeAll(descriptor, line)
    }
}

/// Writes `data` to `descriptor` with one call.
private func writeAll(_ descriptor: Int32, _ data: Data) {
    _ = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
}
