// `swift run inventory`: a small Linux service built on DispatchStore. It reads JSON Lines events
// from standard input, keeps three stores, logs to standard error, can write an action log, and on
// end of input, SIGTERM or SIGINT drains what is in flight and prints a JSON summary.

import DispatchStore
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
    usage: inventory [--log PATH] [--verbose | --quiet] < events.jsonl
           inventory --replay PATH
           inventory --help

    An inventory service: reads one JSON event per line from standard input,
      {"event": "restock", "item": "apple", "quantity": 10}
      {"event": "order", "id": "o-1", "item": "apple", "quantity": 3}
      {"event": "cancel", "id": "o-1"}
    and keeps three stores: stock (units per item, reservations), orders (each order's status,
    waiting for stock to reserve) and audit (counts of every event and outcome). An order is
    reserved when the stock has enough units and refused otherwise; cancelling a reserved order
    puts its units back.

    At the end of input, or on SIGTERM or SIGINT, it stops reading, lets every accepted event
    finish, prints a JSON summary on standard output and exits 0. Bad lines are reported on
    standard error with their line number and skipped.

    options:
      --log PATH      write every accepted event to PATH as JSON Lines (the file is emptied first)
      --replay PATH   replay an action log written with --log into fresh stores, print the summary
      --verbose       log every event on standard error (default: refused orders, duplicate ids
                      and ignored cancels only)
      --quiet         log errors only
      -h, --help      show this help
    """

@main
struct InventoryProgram {
    static func main() async {
        var logPath: String?
        var replayPath: String?
        var verbosity = InventoryService.Verbosity.normal
        var arguments = CommandLine.arguments.dropFirst()
        while let argument = arguments.popFirst() {
            switch argument {
            case "-h", "--help":
                writeOut(usage + "\n")
                exit(0)
            case "--log", "--replay":
                guard let path = arguments.popFirst(), !path.isEmpty else {
                    fail("\(argument) needs a path", status: 64, showUsage: true)
                }
                if argument == "--log" { logPath = path } else { replayPath = path }
            case "--verbose": verbosity = .verbose
            case "--quiet": verbosity = .quiet
            default: fail("unknown argument '\(argument)'", status: 64, showUsage: true)
            }
        }
        if replayPath != nil && logPath != nil {
            fail("--replay and --log cannot be used together", status: 64, showUsage: true)
        }

        let service: InventoryService
        do {
            service = try InventoryService(logPath: logPath, verbosity: verbosity, diagnostics: writeError)
        } catch {
            fail("\(error)", status: 1)
        }

        if let replayPath {
            do {
                let (summary, report) = try service.replay(contentsOf: replayPath)
                writeError("inventory: \(report)")
                writeOut(summary.json + "\n")
                exit(0)
            } catch {
                fail("\(error)", status: 1)
            }
        }

        // A broken pipe on standard output or error must not kill the service mid-drain.
        signal(SIGPIPE, SIG_IGN)
        let stopper = Stopper(service: service)
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

        writeError(
            "inventory: reading events from standard input" + (logPath.map { " (action log: \($0))" } ?? "")
        )
        var number = 0
        while let line = readLine(strippingNewline: true) {
            number += 1
            service.accept(line: line, number: number)
            if stopper.isStopping { break }
        }
        await stopper.stop(reason: "end of input")
        withExtendedLifetime(sources) {}
    }
}

/// Stops the service once, from end of input or a signal, whichever comes first: drains, prints the
/// summary and exits.
final class Stopper: @unchecked Sendable {
    // @unchecked: `stopping` is guarded by `claimed`.
    private let service: InventoryService
    private let claimed = NSLock()
    private var stopping = false

    init(service: InventoryService) {
        self.service = service
    }

    var isStopping: Bool {
        claimed.withLock { stopping }
    }

    /// Stops the service and exits; a second call waits for the first to exit the program.
    func stop(reason: String) async {
        let first = claimed.withLock {
            defer { stopping = true }
            return !stopping
        }
        guard first else {
            while true { try? await Task.sleep(for: .seconds(3600)) }
        }
        writeError("inventory: \(reason): finishing the accepted events")
        let summary = await service.finish(reason: reason)
        writeOut(summary.json + "\n")
        let (accepted, bad) = (summary.lines.accepted, summary.lines.bad)
        writeError(
            "inventory: stopped after \(accepted) event\(accepted == 1 ? "" : "s") "
                + "(\(bad) bad line\(bad == 1 ? "" : "s"))"
        )
        exit(0)
    }
}

@Sendable
func writeError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

func writeOut(_ text: String) {
    FileHandle.standardOutput.write(Data(text.utf8))
}

func fail(_ message: String, status: Int32, showUsage: Bool = false) -> Never {
    writeError("inventory: \(message)" + (showUsage ? "\n\n\(usage)" : ""))
    exit(status)
}
