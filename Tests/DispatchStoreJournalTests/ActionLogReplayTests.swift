import DispatchStore
import DispatchStoreJournal
import Foundation
import TestSupport
import Testing

/// A state whose value depends on the order of the actions applied to it, and that can be logged
/// with checksums.
struct Chain: StateType, Equatable, Codable {
    var value: UInt64 = 17
    var applied = 0
    var tags: Set<String> = []
}

enum ChainAction: ActionType, Equatable, Codable {
    case mix(UInt64)
}

/// Non-commutative: the same actions in another order give another value.
final class ChainReducer: Reducer<Chain, ChainAction> {
    override func reduce(_ action: ChainAction, into state: inout Chain) {
        guard case .mix(let input) = action else { return }
        state.value = (state.value &* 31) ^ input
        state.applied += 1
        if input % 97 == 0 { state.tags.insert("t\(input % 1_000)") }
    }
}

private let chainIdentifiers = ["a", "b", "c", "d"]

private func chainDispatcher() throws -> (Dispatcher, [Store<Chain, ChainAction>]) {
    let dispatcher = Dispatcher()
    let stores = chainIdentifiers.map { Store<Chain, ChainAction>(identifier: $0, reducer: ChainReducer()) }
    for store in stores {
        try dispatcher.register(store: store)
    }
    return (dispatcher, stores)
}

private func logLines(_ path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
}

private func writeLines(_ lines: [String], to path: String) throws {
    try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
}

@Suite("Action log: replay that reproduces the run, or says it did not")
struct ActionLogReplayTests {
    @Test(
        "8 threads x 5,000 .async dispatches over 4 stores, broadcast and targeted: replay gives every store its live state",
        arguments: 1...3
    )
    func concurrentRunReplaysExactly(run: Int) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let (live, liveStores) = try chainDispatcher()
        let log = try ActionLogMiddleware(path: path, checksums: .every(250))
        live.register(middleware: log)

        await offThePool {
            concurrently(8) { thread in
                var random = UInt64(thread * 7_919 + run)
                for index in 0..<5_000 {
                    random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    let action = ChainAction.mix(random >> 11)
                    if index % 2 == 0 {
                        live.dispatch(action, mode: .async)
                    } else {
                        live.dispatch(action, to: chainIdentifiers[Int(random >> 60) % 4], mode: .async)
                    }
                }
            }
            live.waitUntilIdle()
        }
        log.close()
        #expect(log.writtenCount == 40_000)
        #expect(log.failureCount == 0)

        let (fresh, freshStores) = try chainDispatcher()
        // 40,000 lines: long under ThreadSanitizer, so off the pool that the other tests need.
        let report = try await offThePool {
            try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [ChainAction.self])
        }

        #expect(report.divergences.isEmpty, "\(report.divergences.prefix(3))")
        #expect(report.succeeded)
        #expect(report.replayed == 40_000)
        #expect(report.checksumsVerified >= 4)
        #expect(freshStores.map(\.state) == liveStores.map(\.state))
        #expect(freshStores.map(\.sequenceNumber) == liveStores.map(\.sequenceNumber))
        let applied: Int = liveStores.map(\.state.applied).reduce(0, +)
        #expect(applied == 100_000)
    }

    @Test("lines written out of order within the window are held back and applied in each store's order")
    func reorderedLines() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let (live, liveStores) = try chainDispatcher()
        live.register(middleware: try ActionLogMiddleware(path: path))
        for index in 0..<200 {
            live.dispatch(ChainAction.mix(UInt64(index)), to: index % 3 == 0 ? nil : "b", mode: .sync)
        }
        var lines = try logLines(path)
        lines.reverse()
        try writeLines(lines, to: path)

        let (fresh, freshStores) = try chainDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [ChainAction.self])
        #expect(report.succeeded, "\(report)")
        #expect(freshStores.map(\.state) == liveStores.map(\.state))

        let (small, _) = try chainDispatcher()
        let limited = try ActionLog.replay(
            contentsOf: path,
            into: small,
            actionTypes: [ChainAction.self],
            reorderWindow: 10
        )
        #expect(!limited.succeeded)
        #expect(limited.divergences.contains { $0.code == .sequenceGap })
    }

    @Test("a missing line is a gap naming the store, the number and the line; the store stops before it")
    func gapIsReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let (live, _) = try chainDispatcher()
        live.register(middleware: try ActionLogMiddleware(path: path))
        for index in 0..<10 {
            live.dispatch(ChainAction.mix(UInt64(index)), to: "a", mode: .sync)
        }
        var lines = try logLines(path)
        lines.remove(at: 4)
        try writeLines(lines, to: path)

        let (fresh, freshStores) = try chainDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [ChainAction.self])

        #expect(!report.succeeded)
        let gap = try #require(report.divergences.first)
        #expect(gap.code == .sequenceGap)
        #expect(gap.storeIdentifier == "a")
        #expect(gap.line == 5)
        #expect(gap.message.contains("Store 'a' stopped after sequence number 4"))
        #expect(freshStores[0].sequenceNumber == 4)
        #expect(report.description.contains("DIVERGED"))
    }

    @Test("a line given twice is reported as a duplicate number")
    func duplicateIsReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let (live, _) = try chainDispatcher()
        live.register(middleware: try ActionLogMiddleware(path: path))
        for index in 0..<3 {
            live.dispatch(ChainAction.mix(UInt64(index)), to: "c", mode: .sync)
        }
        var lines = try logLines(path)
        lines.insert(lines[1], at: 2)
        try writeLines(lines, to: path)

        let (fresh, _) = try chainDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [ChainAction.self])
        #expect(report.divergences.map(\.code) == [.duplicateSequenceNumber])
        #expect(report.divergences.first?.line == 3)
    }

    @Test("a state changed outside any action is caught by the checksums, naming the store and the line")
    func checksumsCatchChangesOutsideActions() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let (live, liveStores) = try chainDispatcher()
        let log = try ActionLogMiddleware(path: path, checksums: .every(5))
        live.register(middleware: log)
        for index in 0..<12 {
            live.dispatch(ChainAction.mix(UInt64(index)), mode: .sync)
            if index == 7 { liveStores[2].updateState { $0.value = 0 } }
        }
        log.close()

        let (fresh, _) = try chainDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [ChainAction.self])

        #expect(!report.succeeded)
        let mismatches = report.divergences.filter { $0.code == .checksumMismatch }
        #expect(mismatches.map(\.storeIdentifier) == ["c"])
        #expect(mismatches.first?.line == 10)
        #expect(mismatches.first?.message.contains("updateState") == true)
    }

    @Test("the checkpoint written on close verifies the final states")
    func checkpointVerifiesFinalStates() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let (live, liveStores) = try chainDispatcher()
        let log = try ActionLogMiddleware(path: path)
        live.register(middleware: log)
        for index in 0..<5 {
            live.dispatch(ChainAction.mix(UInt64(index)), mode: .sync)
        }
        log.close()
        #expect(try logLines(path).last?.hasPrefix(#"{"checkpoint":true"#) == true)

        let (clean, _) = try chainDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: clean, actionTypes: [ChainAction.self])
        #expect(report.succeeded)
        #expect(report.checksumsVerified == 4)

        let (altered, alteredStores) = try chainDispatcher()
        alteredStores[3].updateState { $0.tags.insert("extra") }
        let second = try ActionLog.replay(contentsOf: path, into: altered, actionTypes: [ChainAction.self])
        #expect(second.divergences.map(\.storeIdentifier) == ["d"])
        _ = liveStores
    }

    @Test("a line naming a store the dispatcher lacks is reported once; the other stores replay")
    func unknownStore() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let (live, _) = try chainDispatcher()
        live.register(middleware: try ActionLogMiddleware(path: path))
        for index in 0..<4 {
            live.dispatch(ChainAction.mix(UInt64(index)), mode: .sync)
        }
        let fresh = Dispatcher()
        let only = Store<Chain, ChainAction>(identifier: "a", reducer: ChainReducer())
        try fresh.register(store: only)
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [ChainAction.self])
        #expect(report.divergences.map(\.code) == [.unknownStore, .unknownStore, .unknownStore])
        #expect(Set(report.divergences.compactMap(\.storeIdentifier)) == ["b", "c", "d"])
        #expect(only.sequenceNumber == 4)
    }

    @Test("lines without sequence numbers, from older logs, replay in file order")
    func legacyLines() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("actions.jsonl").path
        let type = ActionLog.typeName(of: ChainAction.self)
        let lines = (1...3).map { index in
            #"{"id":\#(index),"time":"2026-11-21T10:00:0\#(index).000Z","mode":"serial","stores":["a","b","c","d"],"type":"\#(type)","payload":{"mix":{"_0":\#(index)}}}"#
        }
        try writeLines(lines, to: path)
        let (fresh, stores) = try chainDispatcher()
        let report = try ActionLog.replay(contentsOf: path, into: fresh, actionTypes: [ChainAction.self])
        #expect(report.succeeded && report.replayed == 3)
        #expect(stores.allSatisfy { $0.state.applied == 3 })
    }
}
