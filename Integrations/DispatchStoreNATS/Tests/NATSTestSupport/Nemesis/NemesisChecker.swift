import DispatchStore
@_spi(DispatchStoreNATS) import DispatchStoreJournal
import DispatchStoreNATS
import Foundation
import TestSupport

/// Compares what a nemesis's replicas were told with what the stream holds and what each replica
/// computed.
///
/// The checks, the way Jepsen checks a history:
///
/// - every acknowledged append is in the stream exactly once, at the sequence number it was told;
/// - every failed append was reported with an error naming the stream, and is in the stream at most
///   once (so is every append cut short by a `kill -9`); every message is an append some replica made;
/// - each run of each replica applied strictly increasing sequence numbers with no gap, its first the
///   one after the snapshot it loaded;
/// - at every sequence number a replica recorded (a checkpoint), its ledger equals the replay of the
///   stream up to there (so any two replicas that reached it agree);
/// - every replica finished with the ledger of the replay of the whole stream, nothing behind.
enum NemesisChecker {
    /// One message of the stream: its id and the token of its append.
    struct Message {
        let sequence: UInt64
        let messageID: String?
        let token: String?
    }

    /// Reads every message of `stream`, in order.
    static func export(_ stream: String, from connection: NATSConnection) async throws -> [Message] {
        let last = try await connection.streamInfo(stream).lastSequence
        guard last > 0 else { return [] }
        let received = Shared<[DeliveredMessage]>([])
        let all = Gate()
        let reader = try StreamReader(
            handle: connection.handle,
            stream: stream,
            subject: "dispatchstore.\(stream)",
            startSequence: 1
        ) {
            message in
            received.append(message)
            if message.sequence == last { all.open() }
        }
        _ = await all.wait()
        reader.close()
        var decoder = try ActionLog.RecordDecoder(actionTypes: [NemesisAction.self], source: "stream \(stream)")
        return received.current.prefix { $0.sequence <= last }.map { message in
            let entry = try? decoder.entry(from: message.data, number: Int(message.sequence))
            var token: String?
            if case .mix(let value)? = entry?.action as? NemesisAction { token = value }
            return Message(sequence: message.sequence, messageID: message.messageID, token: token)
        }
    }

    /// Checks the replicas' logs against the stream.
    static func check(
        logs: [(name: String, url: URL)],
        exported: [Message],
        stream: String,
        from start: Date,
        to end: Date
    ) -> NemesisReport {
        var report = NemesisReport()
        var violations: [String] = []
        report.streamLast = exported.last?.sequence ?? 0
        // The stream: where each token is, and the replay's digest after each message.
        var places: [String: [UInt64]] = [:]
        var ids: [String: UInt64] = [:]
        var replay = NemesisLedger()
        var digests: [UInt64: String] = [0: replay.digest]
        for (index, message) in exported.enumerated() {
            if message.sequence != UInt64(index + 1) {
                violations.append("the stream's message \(index + 1) is missing (found \(message.sequence))")
            }
            guard let token = message.token else {
                violations.append("message \(message.sequence) of stream \(stream) is not an append of a replica")
                continue
            }
            places[token, default: []].append(message.sequence)
            if let id = message.messageID {
                if let earlier = ids[id] {
                    violations.append("message id \(id) is in the stream twice: at \(earlier) and \(message.sequence)")
                }
                ids[id] = message.sequence
            }
            replay.apply(.mix(token: token))
            digests[message.sequence] = replay.digest
        }
        var invoked: Set<String> = []
        var outcomes: [String: NemesisEvent] = [:]
        var successes: [Double] = []
        for (name, url) in logs {
            let events = ((try? String(contentsOf: url, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONDecoder().decode(NemesisEvent.self, from: Data($0.utf8))
            }
            var starts: [Int: UInt64] = [:]
            var firsts: [Int: UInt64] = [:]
            var final: NemesisEvent?
            for event in events {
                switch event.op {
                case .invoke:
                    if let token = event.token { invoked.insert(token) }
                case .ok, .fail:
                    if let token = event.token { outcomes[token] = event }
                    if event.op == .ok { successes.append(event.time) }
                case .start:
                    if let run = event.run { starts[run] = event.snapshot ?? 0 }
                case .first:
                    if let run = event.run, let sequence = event.sequence { firsts[run] = sequence }
                case .checkpoint:
                    report.checkpoints += 1
                    if let sequence = event.sequence, digests[sequence] != event.digest {
                        violations.append(
                            "replica \(name) held \(event.digest ?? "?") after message \(sequence), the replay "
                                + "\(digests[sequence] ?? "nothing")"
                        )
                    }
                case .violation:
                    violations.append(
                        "replica \(name) applied message \(event.sequence ?? 0) when \(event.expected ?? 0) was due"
                    )
                case .stopped:
                    violations.append("replica \(name) stopped: \(event.error ?? "")")
                case .final:
                    final = event
                case .startFailed, .error, .quiet:
                    break
                }
            }
            report.runs[name] = Set(events.compactMap(\.run)).count
            for (run, first) in firsts where starts[run].map({ first != $0 + 1 }) == true {
                violations.append(
                    "run \(run) of replica \(name) applied \(first) first, after snapshot \(starts[run] ?? 0)"
                )
            }
            if let final {
                report.finalLag[name] = final.behind ?? 0
                if final.sequence != report.streamLast || final.digest != digests[report.streamLast]
                    || final.behind != 0
                {
                    violations.append(
                        "replica \(name) finished at message \(final.sequence ?? 0) with \(final.digest ?? "?"), "
                            + "\(final.behind ?? 0) behind; the stream ends at \(report.streamLast) with "
                            + "\(digests[report.streamLast] ?? "?")"
                    )
                }
            } else {
                violations.append("replica \(name) logged no final state")
            }
        }
        // What the replicas were told, against the stream.
        report.attempted = invoked.count
        for token in invoked {
            let found = places[token] ?? []
            switch outcomes[token] {
            case let event? where event.op == .ok:
                report.acknowledged += 1
                if found != [event.sequence ?? 0] {
                    violations.append(
                        "append \(token) was acknowledged at \(event.sequence ?? 0) but the stream holds it at \(found)"
                    )
                }
            case let event?:
                report.failed += 1
                report.failureCodes[event.code ?? "?", default: 0] += 1
                if found.count > 1 { violations.append("failed append \(token) is in the stream \(found.count) times") }
                if (event.code ?? "").isEmpty || !(event.error ?? "").contains("stream \(stream)") {
                    violations.append(
                        "append \(token) failed without an error naming the stream: \(event.error ?? "none")"
                    )
                }
            case nil:
                report.indeterminate += 1
                if found.count > 1 {
                    violations.append("append \(token), cut short, is in the stream \(found.count) times")
                }
            }
        }
        for (token, found) in places where !invoked.contains(token) {
            violations.append("message \(found) holds \(token), which no replica appended")
        }
        // The longest silence while faults were injected.
        let times =
            [start.timeIntervalSince1970] + successes.sorted().filter { $0 <= end.timeIntervalSince1970 }
            + [end.timeIntervalSince1970]
        report.longestWithoutAppend = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 0
        report.violations = violations
        return report
    }
}
