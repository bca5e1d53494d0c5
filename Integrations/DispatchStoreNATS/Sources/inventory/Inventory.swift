// `swift run inventory --nats URL < events.jsonl`: the inventory demo (InventoryCore, shared with the
// root package's `inventory`) with its three stores replicated through a NATS JetStream stream.
// Without --nats it is the same program as the root package's.

import DispatchStore
import DispatchStoreNATS
import Foundation
import InventoryCore

@main
struct ReplicatedInventory {
    static func main() async {
        let options = InventoryCommand.parse(Array(CommandLine.arguments.dropFirst()))
        guard let servers = options.natsServers else {
            await InventoryCommand.run(options)
        }
        let replica = ReplicaService(options: options, servers: servers)
        if let path = options.exportPath {
            await replica.export(to: path)
        } else {
            await replica.run()
        }
    }
}

/// The inventory as one replica of a stream: each accepted event is appended to the stream, and the
/// stream's events, this replica's and the others', are applied in stream order.
struct ReplicaService {
    let options: InventoryOptions
    let servers: [String]
    var stream: String { options.streamName ?? "INVENTORY" }
    var info: @Sendable (String) -> Void { ProgramOutput.info(options.verbosity) }

    /// Reads events from standard input until its end or a signal, then waits until the replica has
    /// applied everything appended so far, prints the summary and exits.
    func run() async -> Never {
        let service = makeService(logPath: nil)
        // The line of the event being appended: events are appended one at a time, in input order.
        let current = Locked<Int?>(nil)
        let verbose = options.verbosity
        let replication = await startReplication(service, snapshotEvery: options.snapshotEvery ?? 1_000) { applied in
            guard verbose != .quiet || !applied.result.succeeded else { return }
            let line = applied.isOwn ? current.withLock { $0 } : nil
            service.logOutcome(
                of: applied.result,
                event: line.map { "Line \($0)" } ?? "Stream message \(applied.sequence)"
            )
        }
        if verbose == .verbose {
            Task { await logLag(of: replication) }
        }
        let performing = Performing()
        let failed = Locked(0)
        let stopper = Stopper(info: info) { reason in
            service.stopAccepting()
            await performing.waitUntilIdle()
            return await finish(service, replication, reason: reason, failed: failed.withLock { $0 })
        }
        info("Reading events from standard input; appending them to stream \(stream).")
        await InventoryCommand.serve(service, stopper: stopper) { line, number in
            guard performing.begin(), let action = service.admit(line: line, number: number) else {
                performing.end()
                return
            }
            current.withLock { $0 = number }
            var failure: ReplicationError?
            do throws(ReplicationError) {
                try await replication.perform(action)
            } catch {
                failure = error
                failed.withLock { $0 += 1 }
                ProgramOutput.writeError("inventory: error: Line \(number) was not applied: \(error.message)")
            }
            performing.end()
            if failure != nil {
                await stopper.stop(reason: "a failed append to stream \(stream)")
            }
        }
    }

    /// Applies the whole stream, from its first message, to fresh stores while an action log at
    /// `path` records every event; prints the summary and exits.
    func export(to path: String) async -> Never {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        if size > 0 {
            ProgramOutput.fail("The action log \(path) already holds events; export the stream to another path.")
        }
        let service = makeService(logPath: path)
        let replication = await startReplication(service, snapshotEvery: nil, fromSnapshot: false) { _ in }
        var summary = await finish(service, replication, reason: "export of stream \(stream)", failed: 0)
        summary.lines = Summary.Lines(read: 0, accepted: 0, bad: 0)
        info("Exported stream \(stream) up to message \(replication.lag.appliedSequence) to \(path).")
        ProgramOutput.writeOut(summary.json + "\n")
        let failures = summary.log?.failures ?? 0
        if failures > 0 {
            ProgramOutput.fail("\(failures) lines could not be written to the action log \(path)")
        }
        exit(0)
    }

    // MARK: Parts

    private func makeService(logPath: String?) -> InventoryService {
        do {
            return try InventoryService(
                logPath: logPath,
                verbosity: options.verbosity,
                logsEvents: false,
                // The page of the stream as this replica applies it, catch-up included.
                report: InventoryReport.open(options),
                diagnostics: ProgramOutput.writeError
            )
        } catch {
            ProgramOutput.fail("\(error)")
        }
    }

    private func startReplication(
        _ service: InventoryService,
        snapshotEvery: Int?,
        fromSnapshot: Bool = true,
        onApply: @escaping @Sendable (Replication.AppliedMessage) -> Void
    ) async -> Replication {
        var configuration = Replication.Configuration(servers: servers, stream: stream)
        configuration.snapshotEvery = snapshotEvery
        configuration.startsFromSnapshot = fromSnapshot
        configuration.replicas = options.streamReplicas
        configuration.credentials = credentials()
        configuration.tls = tls()
        let replication: Replication
        do {
            replication = try await Replication(
                dispatcher: service.dispatcher,
                stores: [service.stock, service.orders, service.audit],
                configuration: configuration,
                onApply: onApply,
                onError: { error in
                    // A snapshot not written is a notice: the replica goes on, and the next one covers it.
                    let level = error.code == .snapshot ? "notice" : "error"
                    ProgramOutput.writeError("inventory: \(level): \(error)")
                }
            )
        } catch {
            ProgramOutput.fail("\(error)")
        }
        info(
            "Stream \(stream) (kept by \(replication.catchUp.streamReplicas) server\(replication.catchUp.streamReplicas == 1 ? "" : "s")) "
                + "on \(servers.joined(separator: ", ")): \(replication.catchUp)."
        )
        return replication
    }

    /// The credentials the command line names, if any.
    ///
    /// A user and the password from its file or from `NATS_PASSWORD`, a token from its file or from
    /// `NATS_TOKEN`, or a credentials file. Exits 1 naming the file or the variable when a secret
    /// cannot be read; never prints a secret.
    private func credentials() -> Replication.Credentials? {
        let environment = ProcessInfo.processInfo.environment
        if let user = options.natsUser {
            if let path = options.natsPasswordFile {
                return .password(user: user, password: secret(in: path, "password"))
            }
            guard let password = environment["NATS_PASSWORD"], !password.isEmpty else {
                ProgramOutput.fail(
                    "--nats-user \(user) needs a password: --nats-password-file PATH, or the environment variable "
                        + "NATS_PASSWORD"
                )
            }
            return .password(user: user, password: password)
        }
        if let path = options.natsTokenFile {
            return .token(secret(in: path, "token"))
        }
        if let path = options.natsCredentialsFile {
            guard FileManager.default.isReadableFile(atPath: path) else {
                ProgramOutput.fail("The credentials file \(path) cannot be read")
            }
            return .file(path)
        }
        if let token = environment["NATS_TOKEN"], !token.isEmpty {
            return .token(token)
        }
        return nil
    }

    /// The secret in the file at `path`, without its final newline.
    private func secret(in path: String, _ what: String) -> String {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            ProgramOutput.fail("The \(what) file \(path) cannot be read: \((error as NSError).localizedDescription)")
        }
        let secret = text.trimmingCharacters(in: .newlines)
        if secret.isEmpty { ProgramOutput.fail("The \(what) file \(path) is empty") }
        return secret
    }

    /// The TLS settings the command line names, if any.
    private func tls() -> Replication.TLS? {
        guard options.natsAuthority != nil || options.natsCertificate != nil else { return nil }
        return Replication.TLS(
            trustedCertificates: options.natsAuthority,
            certificate: options.natsCertificate,
            privateKey: options.natsKey
        )
    }

    /// Logs how far behind the stream the replica is, when that moves by `threshold` messages or
    /// more from what was logged last, and when it is back to none.
    private func logLag(of replication: Replication, threshold: UInt64 = 100) async {
        var logged: UInt64 = 0
        for await lag in replication.lagUpdates() {
            let moved = max(lag.behind, logged) - min(lag.behind, logged)
            guard moved >= threshold || (lag.behind == 0 && logged > 0) else { continue }
            logged = lag.behind
            info("Stream \(stream): \(lag).")
        }
    }

    /// Waits until the replica applied everything appended so far, closes it and sums up.
    private func finish(
        _ service: InventoryService,
        _ replication: Replication,
        reason: String,
        failed: Int
    ) async -> Summary {
        var failed = failed
        do {
            try await replication.waitUntilCaughtUp(timeout: .seconds(120))
        } catch {
            ProgramOutput.writeError("inventory: error: The replica did not catch up with stream \(stream): \(error)")
            failed = max(failed, 1)
        }
        let lag = replication.lag
        await replication.close()
        var summary = await service.finish(reason: reason)
        summary.stream = Summary.Stream(
            name: stream,
            last: lag.appliedSequence,
            caughtUp: replication.catchUp.caughtUp,
            failed: failed,
            replicas: replication.catchUp.streamReplicas,
            behind: lag.behind
        )
        return summary
    }
}

/// Whether an event is being appended, for the stop to wait for it.
final class Performing: Sendable {
    private let state = Locked<(busy: Bool, stopped: Bool, waiters: [CheckedContinuation<Void, Never>])>(
        (false, false, [])
    )

    /// Marks an append as begun; `false` once a stop waits (no append begins then).
    func begin() -> Bool {
        state.withLock { state in
            guard !state.stopped else { return false }
            state.busy = true
            return true
        }
    }

    /// Marks the append as done.
    func end() {
        let waiters = state.withLock { state in
            state.busy = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters {
            waiter.resume()
        }
    }

    /// Refuses new appends and returns once the one under way, if any, is done.
    func waitUntilIdle() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state in
                state.stopped = true
                if state.busy { state.waiters.append(waiter) }
                return !state.busy
            }
            if idle { waiter.resume() }
        }
    }
}
