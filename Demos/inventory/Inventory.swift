// `swift run inventory`: a small Linux service built on DispatchStore. It reads JSON Lines events
// from standard input, keeps three stores, logs to standard error, can write an action log, and on
// end of input, SIGTERM or SIGINT drains what is in flight and prints a JSON summary.

import DispatchStore
import DispatchStoreJournal
import Foundation
import InventoryCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    usage: inventory [--data DIR [--snapshot-every N]] [--log PATH] [--verbose | --quiet] < events.jsonl
           inventory --replay PATH [--verbose | --quiet]
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

    options:
      --data DIR      keep the stores' states in DIR (created if missing) and recover them on start
      --snapshot-every N
                      with --data, write a snapshot every N events (default 1000)
      --log PATH      append every accepted event to PATH as JSON Lines; a line cut short by a
                      crash is cut away first; a log that holds events is refused unless --data
                      carries the state on from the run that wrote them
      --replay PATH   replay an action log written with --log into fresh stores, print the summary

    One inventory at a time uses a --log or a --data: a second one exits 1 naming the process that
    has it (the lock is in PATH.lock, or DIR/journal.lock). Log lines may hold up to 64 MiB.
      --verbose       also log every event's outcome (info)
      --quiet         log errors only (default: errors, notable outcomes such as refused orders,
                      duplicate ids and ignored cancels, and the start and the end)
      -h, --help      show this help

    exit status: 0 when every accepted event was applied (and written, with --log and --data); 1
    when one was not, a write failed, the log or the data directory could not be opened, or a
    replay failed or did not reproduce the logged states; 64 for a bad command line.
    """

@main
struct InventoryProgram {
    static func main() async {
        let options: InventoryOptions
        do {
            options = try InventoryOptions(arguments: Array(CommandLine.arguments.dropFirst()))
        } catch {
            writeError("inventory: \(error)")
            writeError(InventoryOptions.shortUsage)
            exit(64)
        }
        if options.showsHelp {
            writeOut(usage + "\n")
            exit(0)
        }
        let verbosity = options.verbosity
        /// Writes an info line unless quiet.
        let info: @Sendable (String) -> Void = { line in
            if verbosity != .quiet { writeError("inventory: info: \(line)") }
        }

        let service: InventoryService
        do {
            service = try InventoryService(
                logPath: options.logPath,
                dataDirectory: options.dataDirectory,
                snapshotEvery: options.snapshotEvery ?? 1_000,
                verbosity: verbosity,
                diagnostics: writeError
            )
        } catch {
            fail("\(error)")
        }
        if let journal = service.journal {
            // What recovery worked around (a torn record, a damaged snapshot) is a notice.
            let sentence = "Data directory \(journal.directory): \(journal.recovery)."
            if journal.recovery.isClean {
                info(sentence)
            } else if verbosity != .quiet {
                writeError("inventory: notice: \(sentence)")
            }
        }

        if let replayPath = options.replayPath {
            do {
                let (summary, report) = try service.replay(contentsOf: replayPath)
                let sentence = "Replay of \(replayPath): \(report)."
                // A torn last line or an empty log is worth a notice; a replay that diverged, an error.
                if !report.succeeded {
                    writeError("inventory: error: \(sentence)")
                } else if report.tornTail != nil || report.replayed == 0 {
                    if verbosity != .quiet {
                        let empty = report.replayed == 0 ? " The log holds no events." : ""
                        writeError("inventory: notice: \(sentence)\(empty)")
                    }
                } else {
                    info(sentence)
                }
                writeOut(summary.json + "\n")
                exit(report.succeeded ? 0 : 1)
            } catch {
                fail("\(error)")
            }
        }

        // A broken pipe on standard output or error must not kill the service mid-drain.
        signal(SIGPIPE, SIG_IGN)
        let stopper = Stopper(service: service, info: info)
        let signalQueue = DispatchQueue(label: "inventory.signals")
        let sources = [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")].map { number, name in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
            source.setEventHandler {
                Task.detached { await stopper.stop(reason: name) }
            }
            source.resume()
            return source
        }

        info(
            "Reading events from standard input"
                + (options.logPath.map { "; writing the action log to \($0)." } ?? ".")
        )
        var reader = LineReader()
        var number = 0
        while let line = reader.next() {
            number += 1
            switch line {
            case .text(let text):
                service.accept(line: text, number: number)
            case .invalidUTF8:
                service.reportBadLine(number: number, problem: "it is not valid UTF-8")
            case .tooLong(let bytes):
                service.reportBadLine(
                    number: number,
                    problem: "it is \(bytes) bytes long, more than \(reader.maximumLength)"
                )
            }
            if stopper.isStopping { break }
            if service.hasFailed {
                await stopper.stop(reason: "a failed write to the data directory")
            }
        }
        await stopper.stop(reason: "end of input")
        withExtendedLifetime(sources) {}
    }
}

/// Stops the service once, from end of input or a signal, whichever comes first: drains, prints the
/// summary, says what became of the events, and exits (1 when an event was not applied or logged).
final class Stopper: Sendable {
    private let service: InventoryService
    private let info: @Sendable (String) -> Void
    /// Whether a stop began.
    private let stopping = Locked(false)

    init(service: InventoryService, info: @escaping @Sendable (String) -> Void) {
        self.service = service
        self.info = info
    }

    var isStopping: Bool {
        stopping.withLock { $0 }
    }

    /// Stops the service and exits; a second call waits for the first to exit the program.
    func stop(reason: String) async {
        let first = stopping.withLock { stopping in
            defer { stopping = true }
            return !stopping
        }
        guard first else {
            while true { try? await Task.sleep(for: .seconds(3600)) }
        }
        info("Stopping (\(reason)): no more input is read; finishing the accepted events.")
        let summary = await service.finish(reason: reason)
        var failed = false
        if !writeOut(summary.json + "\n") {
            writeError(
                "inventory: error: Cannot write the summary to standard output: \(String(cString: strerror(errno)))."
            )
            failed = true
        }
        let (sentence, isError) = summary.closing
        if isError {
            writeError("inventory: error: \(sentence)")
        } else {
            info(sentence)
        }
        exit(isError || failed ? 1 : 0)
    }
}

@Sendable
func writeError(_ line: String) {
    writeAll(Data((line + "\n").utf8), to: STDERR_FILENO)
}

/// Writes `text` to standard output; returns `false` when that failed (`errno` says why).
@discardableResult
func writeOut(_ text: String) -> Bool {
    writeAll(Data(text.utf8), to: STDOUT_FILENO)
}

/// Writes all of `data` to `descriptor`, retrying short writes; returns `false` on an error.
@discardableResult
func writeAll(_ data: Data, to descriptor: Int32) -> Bool {
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

func fail(_ message: String) -> Never {
    writeError("inventory: error: \(message)")
    exit(1)
}
