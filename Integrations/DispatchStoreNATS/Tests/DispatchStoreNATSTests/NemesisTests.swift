import Foundation
import TestSupport
import Testing

@testable import NATSTestSupport

@Suite("The nemesis: random faults against three servers and three replicas, checked like Jepsen")
struct NemesisTests {
    @Test(
        "30 s of random kills and pauses of servers and replicas: every check holds",
        .enabled(
            if: NATSServer.current != nil || NATSServer.currentRequired,
            "the nemesis needs nats-server 2.10 or newer (DISPATCHSTORE_NEMESIS_SERVER=PATH); the one here is older"
        )
    )
    func thirtySeconds() async throws {
        let server = try #require(
            NATSServer.current,
            "DISPATCHSTORE_REQUIRE_NEMESIS is set, and no nats-server 2.10 or newer"
        )
        let worker = Executables.directory.appendingPathComponent("nats-bench")
        let report = try await Nemesis.run(seconds: 30, worker: worker, program: server)
        #expect(report.violations.isEmpty, "\(report)")
        // It did something: faults of several kinds, appends acknowledged, every replica finished.
        #expect(report.faults.values.reduce(0, +) >= 8 && report.faults.count >= 2, "\(report)")
        #expect(report.acknowledged > 100 && report.streamLast >= UInt64(report.acknowledged), "\(report)")
        #expect(report.finalLag.count == 3 && report.finalLag.values.allSatisfy { $0 == 0 }, "\(report)")
        #expect(report.checkpoints > 0, "\(report)")
    }
}

@Suite("The nemesis's checker finds what breaks a promise, from logs and a stream made up for it")
struct NemesisCheckerTests {
    typealias Message = NemesisChecker.Message

    let start = Date(timeIntervalSince1970: 1_000)

    /// Checks `events` of replica w1 (and a final event at the stream's end, unless given) against
    /// `stream`, the tokens of messages 1, 2, ...
    func check(_ events: [NemesisEvent], stream tokens: [String?], final: Bool = true) throws -> NemesisReport {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var ledger = NemesisLedger()
        for token in tokens.compactMap({ $0 }) {
            ledger.apply(.mix(token: token))
        }
        var all =
            [
                event(.start) {
                    $0.run = 1
                    $0.sequence = 0
                }
            ] + events
        if final {
            all.append(
                event(.final) {
                    $0.sequence = UInt64(tokens.count)
                    $0.digest = ledger.digest
                    $0.behind = 0
                }
            )
        }
        let encoder = JSONEncoder()
        let lines = try all.map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n")
        let log = directory.file("w1.jsonl")
        try lines.write(to: log, atomically: true, encoding: .utf8)
        let messages = tokens.enumerated().map { index, token in
            Message(sequence: UInt64(index + 1), messageID: "w1.x.\(index + 1)", token: token)
        }
        return NemesisChecker.check(
            logs: [("w1", log)],
            exported: messages,
            stream: "N",
            from: start,
            to: start.addingTimeInterval(10)
        )
    }

    func event(_ op: NemesisEvent.Operation, _ fill: (inout NemesisEvent) -> Void = { _ in }) -> NemesisEvent {
        var event = NemesisEvent(op)
        event.time = start.timeIntervalSince1970 + 1
        fill(&event)
        return event
    }

    func invoke(_ token: String) -> NemesisEvent { event(.invoke) { $0.token = token } }
    func ok(_ token: String, _ sequence: UInt64) -> NemesisEvent {
        event(.ok) {
            $0.token = token
            $0.sequence = sequence
        }
    }

    @Test("a history where everything holds has no violation, and its counts")
    func clean() throws {
        let report = try check(
            [
                invoke("a"), ok("a", 1), invoke("b"),
                event(.fail) {
                    $0.token = "b"
                    $0.code = "timedOut"
                    $0.error = "Message w1.x.2 was not acknowledged by stream N in time."
                },
                invoke("c"),
                event(.first) {
                    $0.run = 1
                    $0.sequence = 1
                },
                event(.checkpoint) {
                    $0.sequence = 1
                    $0.digest = {
                        var l = NemesisLedger()
                        l.apply(.mix(token: "a"))
                        return l.digest
                    }()
                },
            ],
            stream: ["a", "b"]
        )
        #expect(report.violations.isEmpty, "\(report.violations)")
        #expect(report.attempted == 3 && report.acknowledged == 1 && report.failed == 1 && report.indeterminate == 1)
        #expect(report.failureCodes == ["timedOut": 1] && report.checkpoints == 1)
    }

    @Test("acknowledged appends lost, moved or doubled are violations")
    func acknowledged() throws {
        let lost = try check([invoke("a"), ok("a", 1)], stream: [])
        #expect(
            lost.violations.contains { $0.contains("append a was acknowledged at 1 but the stream holds it at []") }
        )
        let moved = try check([invoke("a"), ok("a", 1), invoke("b")], stream: ["b", "a"])
        #expect(
            moved.violations.contains { $0.contains("append a was acknowledged at 1 but the stream holds it at [2]") }
        )
        let doubled = try check([invoke("a"), ok("a", 1)], stream: ["a", "a"])
        #expect(doubled.violations.contains { $0.contains("acknowledged at 1 but the stream holds it at [1, 2]") })
    }

    @Test("failures without a clear error, or stored twice; appends nobody made; cut-short ones stored twice")
    func failuresAndPhantoms() throws {
        let unclear = try check(
            [
                invoke("a"),
                event(.fail) {
                    $0.token = "a"
                    $0.code = "timedOut"
                    $0.error = "timeout"
                },
            ],
            stream: []
        )
        #expect(unclear.violations.contains { $0.contains("append a failed without an error naming the stream") })
        let twice = try check(
            [
                invoke("a"),
                event(.fail) {
                    $0.token = "a"
                    $0.code = "timedOut"
                    $0.error = "stream N: no"
                }, invoke("c"),
            ],
            stream: ["a", "a", "c", "c"]
        )
        #expect(twice.violations.contains { $0.contains("failed append a is in the stream 2 times") })
        #expect(twice.violations.contains { $0.contains("append c, cut short, is in the stream 2 times") })
        let phantom = try check([], stream: ["z", nil])
        #expect(phantom.violations.contains { $0.contains("message [1] holds z, which no replica appended") })
        #expect(phantom.violations.contains { $0.contains("message 2 of stream N is not an append of a replica") })
    }

    @Test("a replica's gap, a first message not after its snapshot, a checkpoint or final state unlike the replay")
    func replicaStates() throws {
        let report = try check(
            [
                invoke("a"), ok("a", 1), invoke("b"), ok("b", 2),
                event(.violation) {
                    $0.sequence = 3
                    $0.expected = 2
                },
                event(.first) {
                    $0.run = 1
                    $0.sequence = 2
                },
                event(.checkpoint) {
                    $0.sequence = 2
                    $0.digest = "9:ff"
                },
                event(.stopped) { $0.error = "gone" },
            ],
            stream: ["a", "b"]
        )
        #expect(report.violations.contains { $0.contains("replica w1 applied message 3 when 2 was due") })
        #expect(report.violations.contains { $0.contains("run 1 of replica w1 applied 2 first, after snapshot 0") })
        #expect(report.violations.contains { $0.contains("replica w1 held 9:ff after message 2, the replay 2:") })
        #expect(report.violations.contains { $0.contains("replica w1 stopped: gone") })
        let unfinished = try check([invoke("a"), ok("a", 1)], stream: ["a"], final: false)
        #expect(unfinished.violations == ["replica w1 logged no final state"])
    }
}
