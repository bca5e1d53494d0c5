import Foundation
import InventoryCore
import NATSTestSupport
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("inventory --nats: the demo as replicas of one stream", .serialized)
struct ReplicatedInventoryTests {
    @Test("three replicas fed three files at once end with identical stores, equal to the replay of the export")
    func threeReplicas() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let inputs = (0..<3).map { GeneratedEvent.generate(100, seed: UInt64(11 + $0)).map(\.line) }
        let replicas = try (0..<3).map { index in
            try RunningProgram(
                "inventory",
                ["--nats", cluster.urls[0], "--stream", "SHOP", "--verbose"]
                    + (index == 0 ? ["--snapshot-every", "25"] : [])
            )
        }
        for (replica, lines) in zip(replicas, inputs) {
            // A bad line too: reported and skipped, as without --nats.
            replica.write(
                Data(
                    (lines[..<50] + ["{\"event\": \"steal\"}"] + lines[50...]).joined(separator: "\n").utf8
                        + Data("\n".utf8)
                )
            )
        }
        // Each replica logs its last event's outcome once it is appended and applied; then every
        // event of every replica is in the stream, and the inputs end.
        for replica in replicas {
            #expect(try await waitForOutcome(replica, of: "Line 101"))
        }
        for replica in replicas {
            replica.closeInput()
        }
        var summaries: [Summary] = []
        for replica in replicas {
            let output = await offThePool { replica.wait() }
            #expect(output.status == 0, "\(output.standardError)")
            #expect(output.standardError.contains("inventory: error: Line 51 was skipped: unknown event \"steal\""))
            summaries.append(try Summary.decode(output.standardOutput))
        }
        for summary in summaries {
            #expect(summary.lines == Summary.Lines(read: 101, accepted: 100, bad: 1))
            #expect(summary.stream?.name == "SHOP" && summary.stream?.last == 300 && summary.stream?.failed == 0)
            #expect(summary.audit.events == 300)
            #expect(sameStores(summary, summaries[0]))
        }

        let export = directory.file("export.jsonl").path
        let exported = try await runInventory(["--nats", cluster.urls[0], "--stream", "SHOP", "--export", export])
        #expect(exported.status == 0, "\(exported.standardError)")
        #expect(exported.standardError.contains("Exported stream SHOP up to message 300 to \(export)."))
        let replayed = try await runInventory(["--replay", export])
        #expect(replayed.status == 0, "\(replayed.standardError)")
        #expect(replayed.standardError.contains("replayed 300 transactions; 3 checksums matched"))
        #expect(sameStores(try Summary.decode(replayed.standardOutput), summaries[0]))
    }

    @Test("the guide's cluster with the demo's defaults: kill -9 of the stream's leader, every replica goes on")
    func leaderKilledWithDefaults() async throws {
        let cluster = try await NATSTestCluster.start(nodes: 3)
        defer { cluster.stop() }
        // Every URL and no other flag, as the guide shows it.
        let urls = cluster.urls.joined(separator: ",")
        let inputs = (0..<3).map { GeneratedEvent.generate(150, seed: UInt64(21 + $0)).map(\.line) }
        let replicas = try (0..<3).map { _ in try RunningProgram("inventory", ["--nats", urls, "--verbose"]) }
        for (replica, lines) in zip(replicas, inputs) {
            replica.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        }
        // Every replica has started (a start has its own test, the nemesis's restarted replicas)
        // and appends, one of them well into its input.
        #expect(try await waitForOutcome(replicas[0], of: "Line 30"))
        for replica in replicas[1...] {
            #expect(try await waitForOutcome(replica, of: "Line 5"))
        }
        let leader = try await cluster.leader(ofStream: "INVENTORY")
        leader.kill()
        // Appends resume after the election: every replica applies its last event.
        for replica in replicas {
            #expect(try await waitForOutcome(replica, of: "Line 150"))
        }
        for replica in replicas {
            replica.closeInput()
        }
        var summaries: [Summary] = []
        for replica in replicas {
            let output = await offThePool { replica.wait() }
            #expect(output.status == 0, "\(output.standardError)")
            #expect(!output.standardError.contains("inventory: error:"), "\(output.standardError)")
            summaries.append(try Summary.decode(output.standardOutput))
        }
        for summary in summaries {
            #expect(summary.lines == Summary.Lines(read: 150, accepted: 150, bad: 0))
            #expect(summary.stream?.replicas == 3 && summary.stream?.failed == 0 && summary.stream?.last == 450)
            #expect(summary.stream?.behind == 0)
            #expect(sameStores(summary, summaries[0]))
        }
    }

    @Test("--report writes the inspector's page of the stream as this replica applied it, others' events included")
    func report() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let page = directory.file("replica.html").path
        let mine = #"{"event": "restock", "item": "mine-widget", "quantity": 5}"#
        let theirs = #"{"event": "restock", "item": "their-gadget", "quantity": 7}"#
        let other = try await runInventory(["--nats", cluster.urls[0]], input: Data((theirs + "\n").utf8))
        #expect(other.status == 0, "\(other.standardError)")
        let output = try await runInventory(
            ["--nats", cluster.urls[0], "--report", page],
            input: Data((mine + "\n").utf8)
        )
        #expect(output.status == 0, "\(output.standardError)")
        let html = try String(contentsOfFile: page, encoding: .utf8)
        // The other replica's event, caught up, and this one's, each a transaction of the page.
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.contains("their-gadget") && html.contains("mine-widget"))
        #expect(try Summary.decode(output.standardOutput).stream?.last == 2)
    }

    @Test("kill -9 of a replica mid-stream: restarted, it catches up from a snapshot and the stream, and converges")
    func killedReplica() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let arguments = ["--nats", cluster.urls[0], "--snapshot-every", "20", "--verbose"]
        let events = GeneratedEvent.generate(200, seed: 5).map(\.line)
        let victim = try RunningProgram("inventory", arguments)
        let other = try RunningProgram("inventory", arguments)
        victim.write(Data((events[..<100].joined(separator: "\n") + "\n").utf8))
        other.write(Data((events[100..<160].joined(separator: "\n") + "\n").utf8))
        #expect(try await waitForOutcome(victim, of: "Line 70"))
        victim.send(signal: SIGKILL)
        let killed = await offThePool { victim.wait() }
        #expect(killed.status == SIGKILL || killed.standardOutput.isEmpty)
        // The other replica goes on, and finishes. Its last 40 events come after the kill, so the
        // stream's last 20 messages are its own and it writes the newest snapshot before it exits.
        // (Had the victim appended the newest snapshot's message, that snapshot would be missing:
        // the one who appends a message writes its snapshot, and a dead one writes nothing.)
        other.write(Data((events[160...].joined(separator: "\n") + "\n").utf8))
        #expect(try await waitForOutcome(other, of: "Line 100"))
        other.closeInput()
        let survivor = await offThePool { other.wait() }
        #expect(survivor.status == 0, "\(survivor.standardError)")
        let final = try Summary.decode(survivor.standardOutput)

        // Restarted with no input, the victim catches up: from the latest snapshot, then the messages after it.
        let restarted = try await runInventory(["--nats", cluster.urls[0]], input: Data())
        #expect(restarted.status == 0, "\(restarted.standardError)")
        let summary = try Summary.decode(restarted.standardOutput)
        #expect(summary.stream?.last == final.stream?.last && sameStores(summary, final))
        let last = try #require(final.stream?.last)
        #expect(last >= 170 && summary.audit.events == Int(last))
        #expect(restarted.standardError.contains("caught up \(summary.stream?.caughtUp ?? -1) message"))
        #expect(restarted.standardError.contains("after snapshot"))
        #expect((summary.stream?.caughtUp ?? 99) < 20, "\(restarted.standardError)\n\(survivor.standardError)")
        // The stream object's keys are spelled as documented: name, last, caughtUp, failed.
        #expect(restarted.standardOutput.contains("\"caughtUp\" : \(summary.stream?.caughtUp ?? -1)"))
        #expect(
            restarted.standardOutput.contains("\"behind\" : 0") && restarted.standardOutput.contains("\"replicas\" : 1")
        )

        let export = directory.file("export.jsonl").path
        let exported = try await runInventory(["--nats", cluster.urls[0], "--export", export])
        #expect(exported.status == 0, "\(exported.standardError)")
        let replayed = try await runInventory(["--replay", export])
        #expect(sameStores(try Summary.decode(replayed.standardOutput), final))
    }

    @Test("SIGTERM mid-stream: every accepted event is applied and in the summary, exit 0")
    func terminated() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let replica = try RunningProgram("inventory", ["--nats", cluster.urls[0], "--verbose"])
        replica.write(Data((GeneratedEvent.generate(40, seed: 3).map(\.line).joined(separator: "\n") + "\n").utf8))
        #expect(try await waitForOutcome(replica, of: "Line 10"))
        replica.send(signal: SIGTERM)
        let output = await offThePool { replica.wait() }
        #expect(output.status == 0, "\(output.standardError)")
        let summary = try Summary.decode(output.standardOutput)
        #expect(summary.reason == "SIGTERM" && summary.stream?.failed == 0)
        #expect(summary.lines.accepted >= 10 && UInt64(summary.lines.accepted) == summary.stream?.last)
        #expect(summary.audit.events == summary.lines.accepted)
    }

    @Test("no server reachable: exit 1 with an error naming the URL; a bad command line: exit 64")
    func unreachableAndBadFlags() async throws {
        let url = "nats://127.0.0.1:\(try NATSServer.freePort())"
        let unreachable = try await runInventory(["--nats", url], input: Data())
        #expect(unreachable.status == 1 && unreachable.standardOutput.isEmpty)
        #expect(unreachable.standardError.contains("inventory: error: Cannot start the replica of stream INVENTORY"))
        #expect(unreachable.standardError.contains("No NATS server is reachable at \(url)"))
        for (arguments, problem) in [
            (["--nats"], "--nats needs a URL"),
            (["--stream", "S"], "--stream needs --nats"),
            (["--nats", url, "--data", "d"], "--nats and --data cannot be used together"),
        ] {
            let output = try await runInventory(arguments, input: Data())
            #expect(output.status == 64)
            #expect(
                output.standardError.split(separator: "\n").map(String.init) == [
                    "inventory: \(problem)", InventoryOptions.shortUsage,
                ]
            )
        }
    }
}

/// Whether two summaries hold the same stores.
private func sameStores(_ first: Summary, _ second: Summary) -> Bool {
    first.stock == second.stock && first.reserved == second.reserved && first.orders == second.orders
        && first.audit == second.audit
}

/// Reads the program's standard error until it logs the outcome of `event` ("Line 70"), whatever
/// the outcome's level (an order that another replica placed first is a notice, not info).
private func waitForOutcome(_ program: RunningProgram, of event: String) async throws -> Bool {
    await offThePool {
        while let line = program.nextErrorLine() {
            if line.hasPrefix("inventory: "), line.contains(": \(event): ") { return true }
        }
        return false
    }
}

private func runInventory(_ arguments: [String], input: Data? = nil) async throws -> Executables.Output {
    try await offThePool { try Executables.run("inventory", arguments, input: input) }
}
