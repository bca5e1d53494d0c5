import BrowserDriver
import DispatchStore
import DispatchStoreInspector
import DispatchStoreJournal
import Foundation
import InventoryCore

// I1–I4: the inspector on the inventory demo.
//
// I1: writing the page of a 100,000-transaction inventory log, replay included, against the same
// replay without it (I1B), in the same round: target 2. I2: that page's size (goal: 20 MB). I3:
// in headless Chromium, the time until its first rows show (goal: 2 s), and 20 `#tx=` jumps (goal:
// a median of 100 ms each). I4: the inventory service's throughput with `--log`, with the live
// inspector (`--report`) against without it (I4B): the time ratio at most 1.25 (throughput 0.8).
//
// The log keeps the stores at a constant size (16 order ids, so later orders are duplicates): the
// inspector compares each changed collection member by member, so its cost per transaction grows
// with the collections a transaction changes; I1G and I4G measure that on the growing log the
// inventory's tests use (every order a new id), at a tenth of the length.

/// An inventory event of a steady log (`growing: false`) or of one whose orders all have new ids.
func inventoryEvent(_ index: Int, growing: Bool) -> String {
    let items = ["apple", "pear", "plum", "fig", "kiwi", "quince"]
    let item = items[(index &* 7) % items.count]
    switch (index &* 31) % 10 {
    case 0..<4:
        return #"{"event":"restock","item":"\#(item)","quantity":\#(1 + index % 9)}"#
    case 4..<8:
        let id = growing ? index : index % 16
        return #"{"event":"order","id":"o-\#(id)","item":"\#(item)","quantity":\#(1 + index % 4)}"#
    default:
        let id = growing ? (index &* 13) % (index + 1) : (index &* 13) % 16
        return #"{"event":"cancel","id":"o-\#(id)"}"#
    }
}

/// An inventory log of `events` events, written once per run by the inventory service itself.
final class PreparedInventoryLog: Sendable {
    private static let logs = Locked([String: PreparedInventoryLog]())

    let path: String
    let events: Int

    private init(path: String, events: Int) {
        self.path = path
        self.events = events
    }

    static func of(events: Int, growing: Bool) -> PreparedInventoryLog {
        let key = "\(events)-\(growing)"
        if let log = logs.value[key] { return log }
        let path = benchDirectory().appendingPathComponent("inventory-\(key).jsonl").path
        let service = try! InventoryService(logPath: path, verbosity: .quiet, diagnostics: { _ in })
        for index in 0..<events {
            service.accept(line: inventoryEvent(index, growing: growing), number: index + 1)
        }
        let finished = DispatchSemaphore(value: 0)
        Task {
            _ = await service.finish(reason: "prepared")
            finished.signal()
        }
        finished.wait()
        let log = PreparedInventoryLog(path: path, events: events)
        logs.withLock { $0[key] = log }
        return log
    }
}

/// The page of the steady log of `events` events, written once per run (as I1 writes it), for I2
/// and I3: its path, its size and the log's transaction ids.
func preparedInspectorPage(events: Int) -> (path: String, bytes: Int, ids: [UInt64]) {
    preparedPages.withLock { pages in
        if let page = pages[events] { return page }
        let log = PreparedInventoryLog.of(events: events, growing: false)
        let path = benchDirectory().appendingPathComponent("inspected-\(events).html").path
        let report = try! InventoryReport(path: path, limit: 1_000_000, verbosity: .quiet) { _ in }
        let service = try! InventoryService(verbosity: .quiet, report: report, diagnostics: { _ in })
        _ = try! service.replay(contentsOf: log.path)
        let written = try! report.inspector.writePage(to: path)
        let ids = try! ActionLog.read(contentsOf: log.path, actionTypes: [InventoryAction.self]).entries.map(\.id)
        let page = (path, written.byteCount, ids)
        pages[events] = page
        return page
    }
}

private let preparedPages = Locked([Int: (path: String, bytes: Int, ids: [UInt64])]())

func inspectorScenarios(scale: Double) -> [Scenario] {
    let events = scaled(100_000, scale)
    let growingEvents = scaled(10_000, scale)
    var scenarios = [
        replayScenario(id: "I1B", events: events, growing: false, baseline: nil, inspected: false),
        replayScenario(id: "I1", events: events, growing: false, baseline: "I1B", inspected: true),
        replayScenario(id: "I1GB", events: growingEvents, growing: true, baseline: nil, inspected: false),
        replayScenario(id: "I1G", events: growingEvents, growing: true, baseline: "I1GB", inspected: true),
        pageSizeScenario(events: events),
    ]
    if HeadlessBrowser.isAvailable {
        scenarios += [firstRowsScenario(events: events), jumpScenario(events: events)]
    }
    scenarios += [
        serviceScenario(id: "I4B", events: events, growing: false, baseline: nil, reported: false),
        serviceScenario(id: "I4", events: events, growing: false, baseline: "I4B", reported: true),
        serviceScenario(id: "I4GB", events: growingEvents, growing: true, baseline: nil, reported: false),
        serviceScenario(id: "I4G", events: growingEvents, growing: true, baseline: "I4GB", reported: true),
    ]
    return scenarios
}

/// I1, I1G and their baselines: replaying the log into a fresh inventory, with the page written or not.
private func replayScenario(id: String, events: Int, growing: Bool, baseline: String?, inspected: Bool) -> Scenario {
    let what = growing ? "a growing inventory log of \(events) events" : "a steady inventory log of \(events) events"
    return Scenario(
        id: id,
        summary: inspected ? "write the inspector's page of \(what), replay included" : "replay \(what)",
        operations: events,
        baseline: baseline,
        target: inspected && !growing ? 2 : nil
    ) {
        let log = PreparedInventoryLog.of(events: events, growing: growing)
        let page = benchDirectory().appendingPathComponent("\(id).html").path
        var summary: Summary?
        var written: (byteCount: Int, transactionCount: Int)?
        return Repetition(
            run: {
                written = nil
                try? FileManager.default.removeItem(atPath: page)
                let report =
                    inspected ? try! InventoryReport(path: page, limit: 1_000_000, verbosity: .quiet) { _ in } : nil
                let service = try! InventoryService(verbosity: .quiet, report: report, diagnostics: { _ in })
                // With a report, the replay writes the page at its end (as `inventory --replay LOG
                // --report PAGE` does): once, not again here.
                summary = try? service.replay(contentsOf: log.path).0
                if let report {
                    let bytes = (try? FileManager.default.attributesOfItem(atPath: page)[.size]) as? Int
                    written = bytes.map { ($0, report.inspector.transactionCount) }
                }
            },
            check: {
                guard summary?.lines.accepted == log.events else {
                    return "replayed \(String(describing: summary?.lines))"
                }
                guard inspected else { return nil }
                guard let written, written.transactionCount == log.events, written.byteCount > 0 else {
                    return "the page: \(String(describing: written))"
                }
                return nil
            },
            notes: { written.map { String(format: "page %.1f MB", Double($0.byteCount) / 1_048_576) } ?? "" }
        )
    }
}

/// I2: the size of I1's page.
private func pageSizeScenario(events: Int) -> Scenario {
    var scenario = Scenario(
        id: "I2",
        summary: "the size of I1's page (goal: at most 20 MB)",
        operations: 1,
        baseline: nil,
        target: nil
    ) {
        let page: (path: String, bytes: Int, ids: [UInt64])? = preparedInspectorPage(events: events)
        return Repetition(
            run: {},
            check: {
                guard let page else { return "I1 wrote no page" }
                return page.bytes <= 20 << 20
                    ? nil : String(format: "the page is %.1f MB, over 20 MB", Double(page.bytes) / 1_048_576)
            },
            notes: {
                page.map {
                    String(
                        format: "%.2f MB, %d bytes per transaction",
                        Double($0.bytes) / 1_048_576,
                        $0.bytes / max(1, $0.ids.count)
                    )
                } ?? ""
            }
        )
    }
    scenario.showsTotal = true
    return scenario
}

/// A scenario in headless Chromium, with a limit of 2 s per repetition.
private func browserScenario(
    id: String,
    summary: String,
    operations: Int,
    prepare: @escaping () -> Repetition
) -> Scenario {
    var scenario = Scenario(
        id: id,
        summary: summary,
        operations: operations,
        baseline: nil,
        target: nil,
        limit: Scenario.Limit(seconds: 2),
        prepare: prepare
    )
    scenario.showsTotal = true
    return scenario
}

/// I1's page, a browser and a tab in it; the page opened there, its rows drawn, when `opened`.
private func pageInBrowser(
    events: Int,
    opened: Bool
) -> (page: (path: String, bytes: Int, ids: [UInt64])?, browser: HeadlessBrowser?, tab: BrowserPage?) {
    let page = preparedInspectorPage(events: events)
    let browser = try? HeadlessBrowser()
    let tab = try? browser?.newPage()
    if opened, let tab {
        try? tab.navigate(to: URL(fileURLWithPath: page.path).absoluteString)
        _ = try? tab.waitUntil("document.body.dataset.ready === 'rows'")
    }
    return (page, browser, tab)
}

/// I3: loading I1's page in headless Chromium until its first rows show.
private func firstRowsScenario(events: Int) -> Scenario {
    browserScenario(
        id: "I3",
        summary: "open I1's page in headless Chromium until its first rows show (goal: within 2 s)",
        operations: 1
    ) {
        let (page, browser, tab) = pageInBrowser(events: events, opened: false)
        var shown = false
        var measured = 0.0
        return Repetition(
            run: {
                guard let page, let tab else { return }
                try? tab.navigate(to: URL(fileURLWithPath: page.path).absoluteString)
                shown = (try? tab.waitUntil("document.body.dataset.ready === 'rows'")) ?? false
                measured =
                    (try? tab.evaluate("performance.getEntriesByName('inspector-rows')[0].startTime")) as? Double ?? 0
            },
            check: {
                defer { browser?.close() }
                guard page != nil, tab != nil else { return "no page or no browser" }
                return shown ? nil : "no rows shown"
            },
            notes: { String(format: "the page's own mark: rows after %.0f ms", measured) }
        )
    }
}

/// I3J: 20 `#tx=` jumps to transactions spread over I1's page, each until its state and changes show.
private func jumpScenario(events: Int) -> Scenario {
    browserScenario(
        id: "I3J",
        summary: "20 #tx= jumps in I1's page until the state and the changes show (goal: median under 100 ms)",
        operations: 20
    ) {
        let (page, browser, tab) = pageInBrowser(events: events, opened: true)
        var times: [Double] = []
        return Repetition(
            run: {
                guard let page, let tab, page.ids.count > 20 else { return }
                for jump in 0..<20 {
                    let id = page.ids[(jump * 7_919 + 13) % page.ids.count]
                    // The time from setting the address until the detail is drawn, in the page.
                    let script = """
                        new Promise(resolve => {
                          const start = performance.now();
                          location.hash = '#tx=\(id)';
                          const check = () => {
                            if (document.body.dataset.selected === 'tx=\(id)'
                                && document.querySelector('#detail .state')) resolve(performance.now() - start);
                            else setTimeout(check, 0);
                          };
                          check();
                        })
                        """
                    times.append((try? tab.evaluate(script, awaitPromise: true)) as? Double ?? .infinity)
                }
            },
            check: {
                defer { browser?.close() }
                return times.count == 20 && times.allSatisfy(\.isFinite) ? nil : "the jumps did not all show: \(times)"
            },
            notes: {
                let sorted = times.sorted()
                guard sorted.count == 20 else { return "" }
                return String(format: "median %.1f ms, slowest %.1f ms", (sorted[9] + sorted[10]) / 2, sorted[19])
            }
        )
    }
}

/// I4, I4G and their baselines: the inventory service taking every event of the log's input, with
/// `--log`, and with the live inspector (`--report`) or not; the page is not written (it is at the
/// end of a run, as I1 measures).
private func serviceScenario(id: String, events: Int, growing: Bool, baseline: String?, reported: Bool) -> Scenario {
    let what = growing ? "a growing input" : "a steady input"
    return Scenario(
        id: id,
        summary: "the inventory service with --log takes \(events) events of \(what)"
            + (reported ? ", with the live inspector (--report)" : ""),
        operations: events,
        baseline: baseline,
        target: reported && !growing ? 1.25 : nil
    ) {
        let lines = (0..<events).map { inventoryEvent($0, growing: growing) }
        let log = benchDirectory().appendingPathComponent("\(id)-\(UUID().uuidString).jsonl").path
        let page = benchDirectory().appendingPathComponent("\(id).html").path
        let report =
            reported ? try! InventoryReport(path: page, limit: Inspector.defaultLimit, verbosity: .quiet) { _ in } : nil
        let service = try! InventoryService(logPath: log, verbosity: .quiet, report: report, diagnostics: { _ in })
        return Repetition(
            run: {
                for (index, line) in lines.enumerated() {
                    service.accept(line: line, number: index + 1)
                }
                service.dispatcher.waitUntilIdle()
            },
            check: {
                defer { try? FileManager.default.removeItem(atPath: log) }
                let kept = report?.inspector.transactionCount ?? 0
                if reported, kept != min(events, Inspector.defaultLimit) { return "the inspector kept \(kept)" }
                return expect(service.audit.state.events, events, "events")
            }
        )
    }
}
