import DispatchStore
import Foundation
import NATSTestSupport
import TestSupport
import Testing

@testable import DispatchStoreNATS

@Suite("NATSConnection: the Swift layer over nats.c, against a real server", .serialized)
struct NATSConnectionTests {
    @Test("no server reachable: an error naming every URL, within the connect timeout")
    func noServer() async throws {
        let urls = ["nats://127.0.0.1:\(try NATSServer.freePort())", "nats://127.0.0.1:\(try NATSServer.freePort())"]
        let started = ContinuousClock.now
        await #expect {
            _ = try await NATSConnection.connect(to: urls)
        } throws: { error in
            guard let error = error as? NATSError else { return false }
            return error.code == .noServer && error.servers == urls
                && error.message.contains(urls[0]) && error.message.contains(urls[1])
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        await #expect {
            _ = try await NATSConnection.connect(to: [])
        } throws: { error in
            (error as? NATSError)?.code == .invalidArgument
        }
    }

    @Test("streams, publishing with ids and expected sequences, and reading messages back")
    func streamsAndPublishing() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let connection = try await NATSConnection.connect(to: cluster.urls)
        defer { Task { await connection.close() } }
        #expect(connection.isConnected && connection.state == "connected to \(cluster.urls[0])")
        #expect(connection.maximumPayload == 1_048_576)

        await #expect {
            _ = try await connection.streamInfo("MISSING")
        } throws: { error in
            guard let error = error as? NATSError else { return false }
            return error.code == .streamNotFound && error.jetStreamCode == 10059 && error.stream == "MISSING"
                && error.message.contains("stream MISSING") && error.message.contains(cluster.urls[0])
        }
        let created = try await connection.createStream(StreamConfiguration(name: "ORDERS", subjects: ["orders.>"]))
        #expect(created.name == "ORDERS" && created.subjects == ["orders.>"] && created.lastSequence == 0)
        // Creating it again returns the existing one.
        #expect(
            try await connection.createStream(StreamConfiguration(name: "ORDERS", subjects: ["x"])).subjects == [
                "orders.>"
            ]
        )

        let first = try await connection.publish(Data("one".utf8), to: "orders.new", messageID: "m-1")
        #expect(first == PublishAck(stream: "ORDERS", sequence: 1, duplicate: false))
        let repeated = try await connection.publish(Data("one again".utf8), to: "orders.new", messageID: "m-1")
        #expect(repeated.sequence == 1 && repeated.duplicate)
        let second = try await connection.publish(Data("two".utf8), to: "orders.new", expectedLastSequence: 1)
        #expect(second.sequence == 2)
        await #expect {
            _ = try await connection.publish(Data("stale".utf8), to: "orders.new", expectedLastSequence: 1)
        } throws: { error in
            guard let error = error as? NATSError else { return false }
            return error.code == .wrongLastSequence && error.jetStreamCode == 10071
                && error.message.contains("orders.new")
        }
        #expect(try await connection.streamInfo("ORDERS").lastSequence == 2)
        let message = try await connection.message(in: "ORDERS", sequence: 1)
        #expect(message == StreamMessage(subject: "orders.new", sequence: 1, messageID: "m-1", data: Data("one".utf8)))
        #expect(try await connection.message(in: "ORDERS", sequence: 9) == nil)
        try await connection.deleteStream("ORDERS")
        await #expect(throws: NATSError.self) { _ = try await connection.streamInfo("ORDERS") }
    }

    @Test("pipelined publishes are acknowledged in order; a stream reader delivers them in order from any start")
    func pipelinedAndOrdered() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let connection = try await NATSConnection.connect(to: cluster.urls)
        defer { Task { await connection.close() } }
        try await connection.createStream(StreamConfiguration(name: "LOG", subjects: ["log"]))
        let acks = Shared<[String: PublishAck]>([:])
        let all = Countdown(200)
        let publisher = try AsyncPublisher(handle: connection.handle) { id, result in
            if case .success(let ack) = result { acks.withLock { $0[id] = ack } }
            all.tick()
        }
        for index in 0..<200 {
            publisher.send(
                Data("\(index)".utf8),
                to: "log",
                messageID: "p-\(index)",
                timeout: .seconds(10),
                stream: "LOG"
            )
        }
        #expect(await all.wait())
        // Sent in call order, so stored in call order.
        #expect((0..<200).allSatisfy { acks.current["p-\($0)"]?.sequence == UInt64($0 + 1) })
        let delivered = Shared<[DeliveredMessage]>([])
        let fifty = Countdown(51)
        let reader = try StreamReader(handle: connection.handle, stream: "LOG", subject: "log", startSequence: 150) {
            message in
            delivered.append(message)
            fifty.tick()
        }
        #expect(await fifty.wait())
        reader.close()
        let messages = delivered.current
        #expect(messages.map(\.sequence) == Array(150...200))
        #expect(messages.allSatisfy { $0.messageID == "p-\(String(decoding: $0.data, as: UTF8.self))" })
        // Each says how many come after it.
        #expect(messages.map(\.pending) == (0...50).reversed().map { UInt64($0) })
    }

    @Test("sends while acknowledgements pile up: the queue takes over, each stored once, in call order")
    func publisherQueueTakesOver() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let connection = try await NATSConnection.connect(to: cluster.urls)
        defer { Task { await connection.close() } }
        try await connection.createStream(StreamConfiguration(name: "PILE", subjects: ["pile"]))
        let acks = Shared<[String: PublishAck]>([:])
        let failures = Shared<[String]>([])
        let all = Countdown(2_000)
        // Beyond 128 awaiting their acknowledgement, sends are left to the publisher's queue (and
        // nats.c makes the queue wait beyond 256).
        let publisher = try AsyncPublisher(handle: connection.handle, maximumPending: 256) { id, result in
            switch result {
            case .success(let ack): acks.withLock { $0[id] = ack }
            case .failure(let error): failures.withLock { $0.append("\(id): \(error)") }
            }
            all.tick()
        }
        // Each task's sends in order; a lock makes the call order of all of them known.
        let order = Shared<[String]>([])
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<4 {
                group.addTask {
                    for index in 0..<500 {
                        let id = "t\(task)-\(index)"
                        order.withLock { order in
                            order.append(id)
                            publisher.send(
                                Data(id.utf8),
                                to: "pile",
                                messageID: id,
                                timeout: .seconds(10),
                                stream: "PILE"
                            )
                        }
                    }
                }
            }
        }
        #expect(await all.wait())
        #expect(failures.current.isEmpty)
        let sequences = order.current.map { acks.current[$0]?.sequence }
        #expect(sequences == (1...2_000).map { UInt64($0) })
        #expect(publisher.batchesSentByQueue > 0)
    }

    @Test("a key-value bucket: put, get, compare-and-set, purge, keys")
    func keyValue() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let connection = try await NATSConnection.connect(to: cluster.urls)
        defer { Task { await connection.close() } }
        let bucket = try await connection.keyValueBucket("settings")
        #expect(try await bucket.entry(for: "a") == nil)
        #expect(try await bucket.keys().isEmpty)
        let first = try await bucket.update(Data("1".utf8), for: "a", revision: 0)
        await #expect {
            _ = try await bucket.update(Data("x".utf8), for: "a", revision: 0)
        } throws: { error in
            (error as? NATSError)?.code == .wrongLastSequence && (error as? NATSError)?.stream == "settings"
        }
        let second = try await bucket.update(Data("2".utf8), for: "a", revision: first)
        await #expect {
            _ = try await bucket.update(Data("y".utf8), for: "a", revision: first)
        } throws: { error in
            (error as? NATSError)?.code == .wrongLastSequence
        }
        #expect(
            try await bucket.entry(for: "a") == KeyValueBucket.Entry(key: "a", value: Data("2".utf8), revision: second)
        )
        try await bucket.put(Data("b".utf8), for: "b.c")
        #expect(Set(try await bucket.keys()) == ["a", "b.c"])
        try await bucket.purge("a")
        #expect(try await bucket.entry(for: "a") == nil)
        #expect(try await bucket.keys() == ["b.c"])
        // Reopening finds the same bucket.
        #expect(try await connection.keyValueBucket("settings").entry(for: "b.c")?.value == Data("b".utf8))
    }

    @Test("calls after close fail with connectionClosed; close twice is harmless")
    func closed() async throws {
        let cluster = try await NATSTestCluster.start()
        defer { cluster.stop() }
        let connection = try await NATSConnection.connect(to: cluster.urls)
        await connection.close()
        await connection.close()
        #expect(!connection.isConnected && connection.state == "closed")
        await #expect {
            _ = try await connection.streamInfo("X")
        } throws: { error in
            (error as? NATSError)?.code == .connectionClosed
        }
    }
}
