import CNATS
import DispatchStore
import DispatchStoreNATS
import Foundation

/// The state every scenario replicates: a few counters, so that its snapshots keep one size
/// whatever the length of the history.
struct Tally: StateType, Codable, Equatable {
    var total = 0
    var byBucket = [Int](repeating: 0, count: 64)
    var applied = 0
}

enum TallyAction: ActionType, Codable, Equatable {
    case add(bucket: Int, amount: Int)
}

final class TallyReducer: Reducer<Tally, TallyAction> {
    override func reduce(_ action: TallyAction, into state: inout Tally) {
        if case .add(let bucket, let amount) = action {
            state.total &+= amount
            state.byBucket[bucket % 64] &+= amount
        }
        state.applied += 1
    }
}

/// A dispatcher with one replicated tally.
struct BenchReplica {
    let dispatcher: Dispatcher
    let tally: Store<Tally, TallyAction>
    let replication: Replication

    static func start(
        _ urls: [String],
        stream: String,
        replicas: Int = 1,
        snapshotEvery: Int? = nil,
        onApply: (@Sendable (Replication.AppliedMessage) -> Void)? = nil
    ) async throws -> BenchReplica {
        let dispatcher = Dispatcher()
        let tally = Store<Tally, TallyAction>(identifier: "tally", reducer: TallyReducer())
        try dispatcher.register(store: tally)
        var configuration = Replication.Configuration(servers: urls, stream: stream)
        configuration.replicas = replicas
        configuration.snapshotEvery = snapshotEvery
        configuration.timeout = .seconds(120)
        let replication = try await Replication(
            dispatcher: dispatcher,
            stores: [tally],
            configuration: configuration,
            onApply: onApply
        )
        return BenchReplica(dispatcher: dispatcher, tally: tally, replication: replication)
    }
}

/// The `index`th action of a run.
func action(_ index: Int) -> TallyAction {
    .add(bucket: index % 64, amount: index % 1_000 + 1)
}

/// Performs `count` actions through `replication` from `window` tasks, each performing the next
/// action nobody took yet until none is left: at most `window` wait at once.
///
/// No task is made per action, so that the figures per perform hold the replication's cost, not the
/// benchmark's (a child task per action cost about 2 µs of the client's CPU on the 2-core VM).
///
/// - Returns: How long it took.
func performPipelined(
    _ replication: Replication,
    count: Int,
    from start: Int = 0,
    window: Int = 512
) async throws
    -> Duration
{
    let clock = ContinuousClock()
    let began = clock.now
    let next = Locked(start)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<min(window, count) {
            group.addTask {
                while true {
                    let taken = next.withLock { next -> Int? in
                        guard next < start + count else { return nil }
                        defer { next += 1 }
                        return next
                    }
                    guard let index = taken else { return }
                    _ = try await replication.perform(action(index))
                }
            }
        }
        try await group.waitForAll()
    }
    return clock.now - began
}

/// Connects to `url` with nats.c and opens JetStream, up to 4,096 asynchronous publishes awaiting
/// their acknowledgement.
func openJetStream(_ url: String) throws -> (connection: OpaquePointer, context: OpaquePointer) {
    var connection: OpaquePointer?
    guard natsConnection_ConnectTo(&connection, url) == NATS_OK, let connection else {
        throw BenchError("cannot connect to \(url)")
    }
    var options = jsOptions()
    jsOptions_Init(&options)
    options.PublishAsync.MaxPending = 4_096
    // A publish that finds 4,096 awaiting waits for room up to 60 s, rather than nats.c's 200 ms
    // (then it fails with a timeout): on a busy machine the server may take that long.
    options.PublishAsync.StallWait = 60_000
    var context: OpaquePointer?
    guard natsConnection_JetStream(&context, connection, &options) == NATS_OK, let context else {
        natsConnection_Destroy(connection)
        throw BenchError("cannot open JetStream at \(url)")
    }
    return (connection, context)
}

/// Hands each of `payloads` to `js_PublishAsync` with the message id `<ids>.<index>`.
func publishAsync(_ payloads: [Data], to subject: String, context: OpaquePointer, ids: String) throws {
    for (index, payload) in payloads.enumerated() {
        var publish = jsPubOptions()
        jsPubOptions_Init(&publish)
        let status = "\(ids).\(index)".withCString { id in
            publish.MsgId = id
            return payload.withUnsafeBytes { bytes in
                js_PublishAsync(context, subject, bytes.baseAddress, Int32(bytes.count), &publish)
            }
        }
        guard status == NATS_OK else { throw BenchError("js_PublishAsync failed: status \(status.rawValue)") }
    }
}

/// Publishes `payloads` to `subject` with nats.c's `js_PublishAsync` (each with a message id, as a
/// replica's appends have) and waits for every acknowledgement: the baseline of N1.
///
/// - Returns: How long it took.
func publishRaw(_ payloads: [Data], to subject: String, url: String, round: Int) throws -> Duration {
    let (connection, context) = try openJetStream(url)
    defer {
        jsCtx_Destroy(context)
        natsConnection_Destroy(connection)
    }
    let clock = ContinuousClock()
    let began = clock.now
    try publishAsync(payloads, to: subject, context: context, ids: "raw.\(round)")
    var complete = jsPubOptions()
    jsPubOptions_Init(&complete)
    complete.MaxWait = 120_000
    guard js_PublishAsyncComplete(context, &complete) == NATS_OK else {
        throw BenchError("js_PublishAsyncComplete did not complete")
    }
    return clock.now - began
}

/// Publishes `payloads` to `subject` as ``publishRaw(_:to:url:round:)`` does, while an ordered
/// consumer of `stream` (nats.c's own, from `startSequence`) reads each message back with
/// `natsSubscription_NextMsg` and its metadata and message id: what a replica's appends and applier
/// cost nats.c and the server, without the replication around them.
///
/// - Returns: How long it took until the last message was read back.
func publishAndReadBack(
    _ payloads: [Data],
    to subject: String,
    stream: String,
    startSequence: UInt64,
    url: String,
    round: Int
) throws -> Duration {
    let (connection, context) = try openJetStream(url)
    defer {
        jsCtx_Destroy(context)
        natsConnection_Destroy(connection)
    }
    var subscribe = jsSubOptions()
    jsSubOptions_Init(&subscribe)
    subscribe.Ordered = true
    subscribe.Config.DeliverPolicy = js_DeliverByStartSequence
    subscribe.Config.OptStartSeq = startSequence
    subscribe.Config.Heartbeat = 1_000_000_000
    var subscription: OpaquePointer?
    let status = stream.withCString { name in
        subscribe.Stream = name
        return js_SubscribeSync(&subscription, context, subject, nil, &subscribe, nil)
    }
    guard status == NATS_OK, let created = subscription else { throw BenchError("cannot read stream \(stream)") }
    defer { natsSubscription_Destroy(created) }
    natsSubscription_SetPendingLimits(created, 1_000_000, 1 << 30)
    let clock = ContinuousClock()
    let began = clock.now
    // Read by the reader thread only, and destroyed after it signalled `done`.
    nonisolated(unsafe) let reading = created
    let done = DispatchSemaphore(value: 0)
    // Set when publishing failed: the reader stops once nothing comes for a second, before the
    // subscription is destroyed (it looked at it only when a wait ends empty, not per message).
    let stop = Locked(false)
    let reader = Thread {
        defer { done.signal() }
        var read = 0
        while read < payloads.count {
            var message: OpaquePointer?
            guard natsSubscription_NextMsg(&message, reading, 1_000) == NATS_OK, let message else {
                if stop.withLock({ $0 }) { return }
                continue
            }
            var metadata: UnsafeMutablePointer<jsMsgMetaData>?
            if natsMsg_GetMetaData(&metadata, message) == NATS_OK { jsMsgMetaData_Destroy(metadata) }
            var id: UnsafePointer<CChar>?
            _ = natsMsgHeader_Get(message, "Nats-Msg-Id", &id)
            natsMsg_Destroy(message)
            read += 1
        }
    }
    reader.start()
    do {
        try publishAsync(payloads, to: subject, context: context, ids: "echo.\(round)")
    } catch {
        stop.withLock { $0 = true }
        done.wait()
        throw error
    }
    done.wait()
    return clock.now - began
}

/// What `getrusage` says of this process so far.
func selfUsage() -> rusage {
    var usage = rusage()
    #if os(Linux)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    return usage
}

/// How many times this process's threads have given up the CPU so far (waiting, or preempted).
func contextSwitches() -> Int {
    let usage = selfUsage()
    return usage.ru_nvcsw + usage.ru_nivcsw
}

/// CPU seconds (user and system) used so far by this process and by the process `pid`.
func cpuSeconds(server pid: Int32?) -> (client: Double, server: Double) {
    let usage = selfUsage()
    let client =
        Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    var server = 0.0
    if let pid, let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
        let end = text.lastIndex(of: ")")
    {
        // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
        let fields = text[text.index(after: end)...].split(separator: " ")
        if fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) {
            server = (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }
    }
    return (client, server)
}

/// A failure of the benchmark itself.
struct BenchError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// The value at `fraction` (0.5: the median) of `values`, sorted.
func percentile(_ values: [Double], _ fraction: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction + 0.5))]
}

/// What `command` prints on its first line, or `unknown`.
func firstLine(of command: String, _ arguments: [String]) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    guard (try? process.run()) != nil else { return "unknown" }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: "\n").first.map(String.init) ?? "unknown"
}
