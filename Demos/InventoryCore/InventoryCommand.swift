import DispatchStore
import DispatchStoreJournal
public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The `inventory` program, shared by the demo of the root package (`swift run inventory`) and the
/// one of `Integrations/DispatchStoreNATS`, which adds `--nats`: the usage, the command line, the
/// service on one machine, and what both print.
public enum InventoryCommand {
    /// The help, printed by `--help`.
    public static let usage = """
        usage: inventory [--data DIR [--snapshot-every N]] [--log PATH] [--report PAGE.html]
                         [--verbose | --quiet] < events.jsonl
               inventory --replay PATH [--report PAGE.html] [--verbose | --quiet]
               inventory --nats URL[,URL...] [--stream NAME] [--replicas N] [--snapshot-every N]
                         [--report PAGE.html] [--verbose | --quiet] < events.jsonl
               inventory --nats URL[,URL...] [--stream NAME] --export PATH
               inventory --help

        An inventory service: reads one JSON event per line from standard input,
          {"event": "restock", "item": "apple", "quantity": 10}
          {"event": "order", "id": "o-1", "item": "apple", "quantity": 3}
          {"event": "cancel", "id": "o-1"}
        and keeps three stores: stock (units per item, reservations), orders (each order's status,
        waiting for stock to reserve) and audit (counts of every event and outcome). An order is
        reserved when the stock has enough units and refused otherwise; cancelling a reserved order
        puts its units back.

        A line is bad, reported with its number and skipped, when it is not valid UTF-8, longer than
        \(LineReader.defaultMaximumLength) bytes, not one of these events, or when a quantity is not a whole number from 1 to
        \(Event.maximumQuantity), or an item name or order id is empty, longer than \(Event.maximumNameLength) characters or holds
        control characters.

        At the end of input, or on SIGTERM or SIGINT, it stops reading, lets every accepted event
        finish, prints a JSON summary on standard output, and says on standard error what became of
        the events. Standard error gets one line per message: "inventory: LEVEL: SENTENCE", LEVEL
        being error, notice or info, and an event named by its input line.

        With --data, the stores' states live in DIR: the service recovers them on start (the latest
        snapshot, then the events after it), records every accepted event before it counts as done,
        and writes a snapshot every N events. After a crash or kill -9 it restarts with the state of
        the events recorded so far, never a mix; feed it the events after them to carry on.

        With --nats (the inventory built from Integrations/DispatchStoreNATS), the stores are
        replicated through a NATS JetStream stream: the service catches up with the stream (from its
        latest snapshot), appends every accepted event to it, and applies the stream's events, its
        own and those of the other replicas, in stream order. At the end it waits until it has
        applied everything appended so far and adds "stream" to the summary. Several replicas fed
        different events end with the same stores. Give every server's URL: a replica whose server
        dies or stops answering goes on through another. On a cluster the stream is kept by three
        servers (--replicas), so it survives the loss of any one; a stream kept by one server is
        unavailable while that server is down: every append fails and no replica can start.

        options:
          --data DIR      keep the stores' states in DIR (created if missing) and recover them on start
          --snapshot-every N
                          with --data, write a snapshot every N events; with --nats, every N messages
                          (default 1000)
          --log PATH      append every accepted event to PATH as JSON Lines; a line cut short by a
                          crash is cut away first; a log that holds events is refused unless --data
                          carries the state on from the run that wrote them
          --replay PATH   replay an action log written with --log or --export into fresh stores,
                          print the summary
          --nats URL[,URL...]
                          replicate the stores through a NATS JetStream stream on these servers
          --stream NAME   with --nats, the stream's name (default INVENTORY)
          --export PATH   with --nats, write the stream as an action log to PATH (for --replay)
          --replicas N    with --nats, how many servers keep the stream and its snapshots (default: 3
                          on a cluster, as many as it has when fewer, 1 on a single server); an
                          existing stream with fewer is raised to N
          --nats-user NAME
                          with --nats, the user to connect as; the password is read from
                          --nats-password-file PATH, or else from the environment variable
                          NATS_PASSWORD (never from the command line, never printed)
          --nats-token-file PATH
                          with --nats, connect with the token in PATH (or in NATS_TOKEN, when no
                          other credentials are given)
          --nats-creds PATH
                          with --nats, connect with a credentials file (a user's JWT and NKey seed)
          --nats-ca PATH  with --nats, talk TLS and trust the authorities in PATH (PEM); a tls:// URL
                          turns TLS on too
          --nats-cert PATH --nats-key PATH
                          with --nats, the certificate and key to show servers that ask for one
          --report PATH   write the inspector's page of the run to PATH, one HTML file to open in a
                          browser: every event's transaction, the stores' states after it and what
                          changed; at the end, and whenever the service receives SIGUSR1. With --data,
                          the page begins with the recovery (the snapshot, then the records after it);
                          with --replay, it shows the log's lines, a line that cannot be read included;
                          with --nats, the stream as this replica applied it, its catch-up included
          --verbose       also log every event's outcome (info)
          --quiet         log errors only (default: errors, notable outcomes such as refused orders,
                          duplicate ids and ignored cancels, and the start and the end)
          -h, --help      show this help

        One inventory at a time uses a --log or a --data: a second one exits 1 naming the process that
        has it (the lock is in PATH.lock, or DIR/journal.lock). Log lines may hold up to 64 MiB.

        exit status: 0 when every accepted event was applied (and written, with --log and --data); 1
        when one was not, a write failed, no NATS server was reachable, the log, the data directory
        or the stream could not be opened, or a replay failed or did not reproduce the logged states;
        64 for a bad command line.
        """

    /// Parses the command line, or exits: 64 with the problem and the one-line usage for a bad one,
    /// 0 after printing the help for `--help`.
    ///
    /// - Parameter arguments: The arguments, without the program's name.
    /// - Returns: The options.
    public static func parse(_ arguments: [String]) -> InventoryOptions {
        let options: InventoryOptions
        do {
            options = try InventoryOptions(arguments: arguments)
        } catch {
            ProgramOutput.writeError("inventory: \(error)")
            ProgramOutput.writeError(InventoryOptions.shortUsage)
            exit(64)
        }
        if options.showsHelp {
            ProgramOutput.writeOut(usage + "\n")
            exit(0)
        }
        return options
    }

    /// Runs the service on one machine (`--data`, `--log`, `--replay`, or none), then exits.
    ///
    /// - Parameter options: The parsed command line, without `--nats`.
    public static func run(_ options: InventoryOptions) async -> Never {
        let verbosity = options.verbosity
        let info = ProgramOutput.info(verbosity)
        let report = InventoryReport.open(options)
        let service: InventoryService
        do {
            service = try InventoryService(
                logPath: options.logPath,
                dataDirectory: options.dataDirectory,
                snapshotEvery: options.snapshotEvery ?? 1_000,
                verbosity: verbosity,
                report: report,
                diagnostics: ProgramOutput.writeError
            )
        } catch {
            ProgramOutput.fail("\(error)")
        }
        if let journal = service.journal {
            // What recovery worked around (a torn record, a damaged snapshot) is a notice.
            let sentence = "Data directory \(journal.directory): \(journal.recovery)."
            if journal.recovery.isClean {
                info(sentence)
            } else if verbosity != .quiet {
                ProgramOutput.writeError("inventory: notice: \(sentence)")
            }
        }

        if let replayPath = options.replayPath {
            do {
                let (summary, report) = try service.replay(contentsOf: replayPath)
                let described = "Replay of \(replayPath): \(report)"
                let sentence = described.hasSuffix(".") ? described : described + "."
                // A torn last line or an empty log is worth a notice; a replay that diverged, an error.
                if !report.succeeded {
                    ProgramOutput.writeError("inventory: error: \(sentence)")
                } else if report.tornTail != nil || report.replayed == 0 {
                    if verbosity != .quiet {
                        let empty = report.replayed == 0 ? " The log holds no events." : ""
                        ProgramOutput.writeError("inventory: notice: \(sentence)\(empty)")
                    }
                } else {
                    info(sentence)
                }
                ProgramOutput.writeOut(summary.json + "\n")
                exit(report.succeeded ? 0 : 1)
            } catch {
                ProgramOutput.fail("\(error)")
            }
        }

        let stopper = Stopper(info: info) { reason in await service.finish(reason: reason) }
        info(
            "Reading events from standard input"
                + (options.logPath.map { "; writing the action log to \($0)." } ?? ".")
        )
        await serve(service, stopper: stopper) { line, number in
            service.accept(line: line, number: number)
            if service.hasFailed {
                await stopper.stop(reason: "a failed write to the data directory")
            }
        }
    }

    /// Serves events from standard input until its end, SIGTERM or SIGINT, then stops the service
    /// with `stopper`, which exits the program.
    ///
    /// Lines that are not text are reported as bad lines of `service`. With a report
    /// (``InventoryService/report``), SIGUSR1 writes its page.
    ///
    /// - Parameters:
    ///   - service: The service, for bad lines.
    ///   - stopper: Stops the service; the signals call it too.
    ///   - accept: Takes a line of text and its number.
    public static func serve(
        _ service: InventoryService,
        stopper: Stopper,
        accept: (String, Int) async -> Void
    ) async -> Never {
        let sources = stopper.handleSignals() + [service.report?.writeOnSignal()].compactMap { $0 }
        var reader = LineReader()
        var number = 0
        while let line = reader.next() {
            number += 1
            switch line {
            case .text(let text):
                await accept(text, number)
            case .invalidUTF8:
                service.reportBadLine(number: number, problem: "it is not valid UTF-8")
            case .tooLong(let bytes):
                service.reportBadLine(
                    number: number,
                    problem: "it is \(bytes) bytes long, more than \(reader.maximumLength)"
                )
            }
            if stopper.isStopping { break }
        }
        await stopper.stop(reason: "end of input")
        withExtendedLifetime(sources) {}
        preconditionFailure("inventory: the stopper returned")
    }
}

/// Stops the service once, from end of input or a signal, whichever comes first: finishes, prints
/// the summary, says what became of the events, and exits (1 when an event was not applied or
/// written).
public final class Stopper: Sendable {
    private let info: @Sendable (String) -> Void
    private let finish: @Sendable (String) async -> Summary
    /// Whether a stop began.
    private let stopping = Locked(false)

    /// Creates a stopper.
    ///
    /// - Parameters:
    ///   - info: Writes an info line (unless quiet).
    ///   - finish: Stops the service for the reason given and returns its summary.
    public init(info: @escaping @Sendable (String) -> Void, finish: @escaping @Sendable (String) async -> Summary) {
        self.info = info
        self.finish = finish
    }

    /// Whether a stop began.
    public var isStopping: Bool {
        stopping.withLock { $0 }
    }

    /// Handles SIGTERM and SIGINT by stopping, and ignores SIGPIPE (a broken pipe on standard output
    /// or error must not kill the service mid-drain).
    ///
    /// - Returns: The signal sources; keep them.
    public func handleSignals() -> [any DispatchSourceSignal] {
        signal(SIGPIPE, SIG_IGN)
        let queue = DispatchQueue(label: "inventory.signals")
        return [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")].map { number, name in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                Task.detached { await self.stop(reason: name) }
            }
            source.resume()
            return source
        }
    }

    /// Stops the service and exits; a second call waits for the first to exit the program.
    ///
    /// - Parameter reason: Why: `end of input`, `SIGTERM`, ...
    public func stop(reason: String) async {
        let first = stopping.withLock { stopping in
            defer { stopping = true }
            return !stopping
        }
        guard first else {
            while true { try? await Task.sleep(for: .seconds(3600)) }
        }
        info("Stopping (\(reason)): no more input is read; finishing the accepted events.")
        let summary = await finish(reason)
        var failed = false
        if !ProgramOutput.writeOut(summary.json + "\n") {
            ProgramOutput.writeError(
                "inventory: error: Cannot write the summary to standard output: \(String(cString: strerror(errno)))."
            )
            failed = true
        }
        let (sentence, isError) = summary.closing
        if isError {
            ProgramOutput.writeError("inventory: error: \(sentence)")
        } else {
            info(sentence)
        }
        exit(isError || failed ? 1 : 0)
    }
}

/// What the program writes: whole lines, to standard output and standard error.
public enum ProgramOutput {
    /// Writes `line` and a newline to standard error.
    @Sendable
    public static func writeError(_ line: String) {
        writeAll(Data((line + "\n").utf8), to: STDERR_FILENO)
    }

    /// Writes `text` to standard output.
    ///
    /// - Returns: `false` when that failed (`errno` says why).
    @discardableResult
    public static func writeOut(_ text: String) -> Bool {
        writeAll(Data(text.utf8), to: STDOUT_FILENO)
    }

    /// What writes an info line at `verbosity` (nothing when quiet).
    public static func info(_ verbosity: InventoryService.Verbosity) -> @Sendable (String) -> Void {
        { line in
            if verbosity != .quiet { writeError("inventory: info: \(line)") }
        }
    }

    /// Writes `message` as an error and exits with status 1.
    public static func fail(_ message: String) -> Never {
        writeError("inventory: error: \(message)")
        exit(1)
    }

    /// Writes all of `data` to `descriptor`, retrying short writes; returns `false` on an error.
    @discardableResult
    static func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += written
            }
            return true
        }
    }
}
