// `swift run -c release nats-bench [--only N1,N2,N3] [--scale F]`
//
// The replication's benchmark, against nats-server processes it starts on free ports of 127.0.0.1
// (and stops): N1, perform's throughput next to nats.c's own asynchronous publishing of the same
// payloads; N2, three replicas on a 3-node R3 cluster: how fast each applies and how far behind the
// stream it is; N3, catching up a 100,000-action history next to a 10,000-action one, with a
// snapshot every 10,000. Each scenario checks its result and says whether it met its target.

import CNATS
import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import DispatchStoreNATS
import Foundation
import NATSTestSupport

// A replica of the nemesis, started by it as a process of its own.
if CommandLine.arguments.dropFirst().first == "--nemesis-worker" {
    await NemesisWorker.main(Array(CommandLine.arguments.dropFirst()))
}

var only: Set<String> = ["N1", "N2", "N3"]
var scale = 1.0
var nemesisSeconds: Double?
var nemesisSeed: UInt64?
var nemesisOverlap = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--nemesis":
        guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else {
            FileHandle.standardError.write(Data("nats-bench: --nemesis needs a number of seconds\n".utf8))
            exit(64)
        }
        nemesisSeconds = value
    case "--overlapping-servers":
        nemesisOverlap = true
    case "--seed":
        guard let value = arguments.popFirst().flatMap({ UInt64($0) }) else {
            FileHandle.standardError.write(Data("nats-bench: --seed needs a whole number\n".utf8))
            exit(64)
        }
        nemesisSeed = value
    case "--only":
        only = Set((arguments.popFirst() ?? "").split(separator: ",").map { $0.uppercased() })
    case "--scale":
        guard let value = arguments.popFirst().flatMap(Double.init), value > 0 else {
            FileHandle.standardError.write(Data("nats-bench: --scale needs a positive number\n".utf8))
            exit(64)
        }
        scale = value
    case "--help", "-h":
        print(
            """
            usage: nats-bench [--only N1,N2,N3] [--scale F]   the benchmark
                   nats-bench --nemesis SECONDS [--seed N] [--overlapping-servers]
                                                               random faults for SECONDS, then the checks
            (needs nats-server on PATH or in /usr/sbin)
            """
        )
        exit(0)
    default:
        FileHandle.standardError.write(Data("nats-bench: unknown argument '\(argument)'; --help explains\n".utf8))
        exit(64)
    }
}

if let nemesisSeconds {
    let worker = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    print("nats-bench: the nemesis, \(Int(nemesisSeconds)) s of faults on 3 servers with 3 replicas")
    let report = try await Nemesis.run(
        seconds: nemesisSeconds,
        worker: worker,
        seed: nemesisSeed,
        overlappingServers: nemesisOverlap
    ) { line in
        print("  " + line)
    }
    print(report)
    exit(report.violations.isEmpty ? 0 : 1)
}

let finalScale = scale
func scaled(_ count: Int) -> Int {
    max(1_000, Int(Double(count) * finalScale))
}

var missed: [String] = []
print(
    "nats-bench: \(firstLine(of: NATSServer.executable, ["--version"])), nats.c \(String(cString: nats_GetVersion()))"
)
print(
    "            \(ProcessInfo.processInfo.activeProcessorCount) cores; wall-clock times on a machine that may be busy"
)

// MARK: N1

if only.contains("N1") {
    let count = scaled(50_000)
    let cluster = try await NATSTestCluster.start()
    defer { cluster.stop() }
    let connection = try await NATSConnection.connect(to: cluster.urls)
    try await connection.createStream(StreamConfiguration(name: "N1RAW", subjects: ["raw"]))
    try await connection.createStream(StreamConfiguration(name: "N1ECHO", subjects: ["echo"]))
    let records = try (0..<count).map { index in
        try ActionLog.record(of: action(index), id: UInt64(index), storeIdentifiers: ["tally"], destination: "N1")
    }
    let replica = try await BenchReplica.start(cluster.urls, stream: "N1")
    var raw: [Double] = []
    var echoed: [Double] = []
    var performed: [Double] = []
    var rawCPU = (client: 0.0, server: 0.0)
    var echoCPU = (client: 0.0, server: 0.0)
    var performCPU = (client: 0.0, server: 0.0)
    var switches = (raw: 0, perform: 0)
    let server = cluster.servers[0].processIdentifier
    for round in 0..<3 {
        let url = cluster.urls[0]
        var before = cpuSeconds(server: server)
        var switchesBefore = contextSwitches()
        let rawTime = try await Task.detached { try publishRaw(records, to: "raw", url: url, round: round) }.value
        var after = cpuSeconds(server: server)
        rawCPU = (rawCPU.client + after.client - before.client, rawCPU.server + after.server - before.server)
        raw.append(Double(count) / rawTime.seconds)
        switches.raw += contextSwitches() - switchesBefore
        before = cpuSeconds(server: server)
        let echoTime = try await Task.detached {
            try publishAndReadBack(
                records,
                to: "echo",
                stream: "N1ECHO",
                startSequence: UInt64(round * count + 1),
                url: url,
                round: round
            )
        }.value
        after = cpuSeconds(server: server)
        echoCPU = (echoCPU.client + after.client - before.client, echoCPU.server + after.server - before.server)
        echoed.append(Double(count) / echoTime.seconds)
        before = cpuSeconds(server: server)
        switchesBefore = contextSwitches()
        let time = try await performPipelined(replica.replication, count: count, from: round * count)
        after = cpuSeconds(server: server)
        switches.perform += contextSwitches() - switchesBefore
        performCPU = (
            performCPU.client + after.client - before.client, performCPU.server + after.server - before.server
        )
        performed.append(Double(count) / time.seconds)
    }
    let applied = replica.tally.state.applied
    guard applied == 3 * count, try await connection.streamInfo("N1RAW").messages == UInt64(3 * count) else {
        throw BenchError("N1: \(applied) actions applied, \(3 * count) expected")
    }
    let ratio = percentile(performed, 0.5) / percentile(raw, 0.5)
    print("")
    print("N1  perform, 1 replica, 1 server, \(count) actions x 3 rounds, up to 512 waiting at once")
    print(
        String(
            format: "    js_PublishAsync of the same records:  %8.0f msgs/s (median; rounds %@)",
            percentile(raw, 0.5),
            raw.map { String(format: "%.0f", $0) }.joined(separator: ", ")
        )
    )
    print(
        String(
            format: "    perform (appended and applied):       %8.0f actions/s (median; rounds %@)",
            percentile(performed, 0.5),
            performed.map { String(format: "%.0f", $0) }.joined(separator: ", ")
        )
    )
    print(
        String(
            format: "    the same, read back through an ordered consumer: %8.0f msgs/s (median; rounds %@)",
            percentile(echoed, 0.5),
            echoed.map { String(format: "%.0f", $0) }.joined(separator: ", ")
        )
    )
    let perAction = { (seconds: Double) in seconds * 1e6 / Double(3 * count) }
    print(
        String(
            format:
                "    CPU per message: js_PublishAsync %.1f µs client + %.1f µs server; read back too %.1f + %.1f; "
                + "perform %.1f µs client + %.1f µs server",
            perAction(rawCPU.client),
            perAction(rawCPU.server),
            perAction(echoCPU.client),
            perAction(echoCPU.server),
            perAction(performCPU.client),
            perAction(performCPU.server)
        )
    )
    print(
        String(
            format: "    client context switches per message: js_PublishAsync %.2f; perform %.2f",
            Double(switches.raw) / Double(3 * count),
            Double(switches.perform) / Double(3 * count)
        )
    )
    print(
        String(
            format: "    throughput: %.2f x js_PublishAsync, %.2f x the same read back (reported)",
            ratio,
            percentile(performed, 0.5) / percentile(echoed, 0.5)
        )
    )
    // What the library controls on two cores shared with the server: its own CPU per perform.
    let cpuRatio = performCPU.client / echoCPU.client
    print(
        String(
            format: "    client CPU per perform %.2f x per message read back, target <= 2: %@",
            cpuRatio,
            cpuRatio <= 2 ? "met" : "MISSED"
        )
    )
    if cpuRatio > 2 { missed.append("N1") }
    await replica.replication.close()
    await connection.close()
}

// MARK: N2

if only.contains("N2") {
    let count = scaled(30_000)
    let cluster = try await NATSTestCluster.start(nodes: 3)
    defer { cluster.stop() }
    let clock = ContinuousClock()
    struct Applies: Sendable {
        var first: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?
        var lags: [Double] = []
    }
    var replicas: [BenchReplica] = []
    var records: [Locked<Applies>] = []
    for index in 0..<3 {
        let applies = Locked(Applies())
        records.append(applies)
        replicas.append(
            try await BenchReplica.start([cluster.urls[index]], stream: "N2", replicas: 3) { message in
                let now = clock.now
                let lag = Date().timeIntervalSince(message.storedAt)
                applies.withLock { applies in
                    if applies.first == nil { applies.first = now }
                    applies.last = now
                    applies.lags.append(lag)
                }
            }
        )
    }
    let serverIDs = cluster.servers.map(\.processIdentifier)
    let cpuBefore = serverIDs.map { cpuSeconds(server: $0) }
    let appendTime = try await performPipelined(replicas[0].replication, count: count)
    for replica in replicas {
        try await replica.replication.waitUntilApplied(through: UInt64(count), timeout: .seconds(300))
    }
    let cpuAfter = serverIDs.map { cpuSeconds(server: $0) }
    let clientCPU = cpuAfter[0].client - cpuBefore[0].client
    let serverCPU = zip(cpuBefore, cpuAfter).reduce(0) { $0 + $1.1.server - $1.0.server }
    let states = replicas.map(\.tally.state)
    guard states.allSatisfy({ $0 == states[0] }), states[0].applied == count else {
        throw BenchError("N2: the replicas differ, or did not apply \(count) actions")
    }
    print("")
    print("N2  3 replicas, 3-node cluster, R3 stream, \(count) actions performed by one replica (512 waiting at once)")
    print(
        String(
            format: "    appended at %.0f actions/s; CPU per action: %.1f µs the 3 replicas + %.1f µs the 3 servers",
            Double(count) / appendTime.seconds,
            clientCPU * 1e6 / Double(count),
            serverCPU * 1e6 / Double(count)
        )
    )
    var slowest = Double.infinity
    for (index, applies) in records.enumerated() {
        let values = applies.withLock { $0 }
        let span = values.first.flatMap { first in values.last.map { ($0 - first).seconds } } ?? 0
        let rate = Double(count - 1) / max(span, 1e-9)
        slowest = min(slowest, rate)
        print(
            String(
                format:
                    "    replica %d (server n%d): applied %.0f actions/s while appended; lag median %.1f ms, p99 %.1f ms",
                index + 1,
                index + 1,
                rate,
                percentile(values.lags, 0.5) * 1_000,
                percentile(values.lags, 0.99) * 1_000
            )
        )
    }
    // Applying alone, without waiting for appends: a replica catching up the whole stream.
    let late = try await BenchReplica.start([cluster.urls[1]], stream: "N2", replicas: 3)
    let catchUp = late.replication.catchUp
    let catchUpRate = Double(catchUp.caughtUp) / catchUp.duration.seconds
    guard late.tally.state == replicas[0].tally.state else { throw BenchError("N2: the late replica differs") }
    print(String(format: "    a 4th replica caught up %d actions at %.0f actions/s", catchUp.caughtUp, catchUpRate))
    let met = catchUpRate >= 10_000
    print(
        String(
            format:
                "    target: each replica applies >= 10,000 actions/s: %@ (applying alone %.0f/s; while appended, the slowest %.0f/s, bounded by the appends)",
            met ? "met" : "MISSED",
            catchUpRate,
            slowest
        )
    )
    if !met { missed.append("N2") }
    for replica in replicas + [late] {
        await replica.replication.close()
    }
}

// MARK: N3

if only.contains("N3") {
    let cluster = try await NATSTestCluster.start()
    defer { cluster.stop() }
    let connection = try await NATSConnection.connect(to: cluster.urls)
    print("")
    print("N3  catching up a history with a snapshot every 10,000 actions (median of 3 starts)")
    var times: [Int: Double] = [:]
    // The histories the target names, whose last action has a snapshot, and the same with 5,000
    // actions after the last snapshot.
    for history in [10_000, 100_000, 15_000, 105_000] {
        let stream = "N3-\(history)"
        let writer = try await BenchReplica.start(cluster.urls, stream: stream, snapshotEvery: 10_000)
        _ = try await performPipelined(writer.replication, count: history)
        // The snapshot of the last multiple of 10,000 is written by the writer after it applied it.
        let bucket = try await connection.keyValueBucket("\(stream)-snapshots")
        let expected = history / 10_000 * 10_000
        var latest = 0
        while latest != expected {
            if let entry = try await bucket.entry(for: "latest"),
                let object = try JSONSerialization.jsonObject(with: entry.value) as? [String: Any]
            {
                latest = object["sequence"] as? Int ?? 0
            }
            if latest != expected { try await Task.sleep(for: .milliseconds(50)) }
        }
        var durations: [Double] = []
        var last: Replication.CatchUp?
        for _ in 0..<3 {
            let replica = try await BenchReplica.start(cluster.urls, stream: stream)
            guard replica.tally.state == writer.tally.state else { throw BenchError("N3: a new replica differs") }
            last = replica.replication.catchUp
            durations.append(replica.replication.catchUp.duration.seconds)
            await replica.replication.close()
        }
        times[history] = percentile(durations, 0.5)
        print(
            String(
                format: "    %6d actions: %6.1f ms (snapshot %@, %d actions after it)",
                history,
                percentile(durations, 0.5) * 1_000,
                last?.snapshotSequence.map(String.init) ?? "none",
                last?.caughtUp ?? 0
            )
        )
        await writer.replication.close()
    }
    let ratio = (times[100_000] ?? .nan) / (times[10_000] ?? .nan)
    let offset = (times[105_000] ?? .nan) / (times[15_000] ?? .nan)
    print(
        String(
            format: "    ratio %.2f (%.2f with 5,000 after the last snapshot), target < 2: %@",
            ratio,
            offset,
            ratio < 2 ? "met" : "MISSED"
        )
    )
    if !(ratio < 2) { missed.append("N3") }
    await connection.close()
}

print("")
print(missed.isEmpty ? "nats-bench: every target met" : "nats-bench: missed \(missed.joined(separator: ", "))")
