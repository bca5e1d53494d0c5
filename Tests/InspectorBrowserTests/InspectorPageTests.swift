import BrowserDriver
import DispatchStore
import DispatchStoreInspector
import DispatchStoreJournal
import Foundation
import InventoryCore
import TestSupport
import Testing

@Test("Chromium is installed where the browser tests are required (DISPATCHSTORE_REQUIRE_CHROMIUM=1, as in CI)")
func chromiumWhereRequired() {
    #expect(!chromiumRequired || HeadlessBrowser.isAvailable, "the browser tests would be skipped: install chromium")
}

@Suite(
    "The inspector's page in headless Chromium",
    .serialized,
    .enabled(
        if: HeadlessBrowser.isAvailable,
        "Chromium is not installed (apt-get install chromium): the browser tests are skipped"
    )
)
struct InspectorPageTests {
    /// The inventory's log of `events` replayed into a page; the log's ids, by line.
    private func inventoryPage(
        _ events: [String],
        in directory: TemporaryDirectory
    ) async throws -> (page: String, ids: [UInt64]) {
        let log = directory.file("actions.jsonl").path
        let page = directory.file("inventory.html").path
        try await runDemo("inventory", ["--log", log, "--quiet"], input: events.joined(separator: "\n") + "\n")
        try await runDemo("inventory", ["--replay", log, "--report", page, "--quiet"])
        let ids = try ActionLog.read(contentsOf: log, actionTypes: [InventoryAction.self]).entries.map(\.id)
        return (page, ids)
    }

    @Test("an inventory replay: a #tx= link opens the transaction; its action, stores, changes and states are shown")
    func transactionView() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (path, ids) = try await inventoryPage(Events.script(), in: directory)
        let open = try OpenPage(path, fragment: "#tx=\(ids[5])")
        defer { open.close() }
        // Line 6 cancels o-1: its units go back, the order is cancelled, the audit counts it.
        #expect(try open.text("#detail h3") == "cancel #\(ids[5])")
        #expect(try open.texts("table.steps tr td:first-child") == ["stock", "orders", "audit"])
        #expect(try open.texts("table.steps tr td:nth-child(3)") == ["—", "stock", "—"])
        #expect(try open.texts("table.steps tr td:nth-child(2)") == ["#6", "#6", "#6"])
        let changes = try open.texts(".change")
        #expect(changes.contains("available.apple: 7→10"))
        #expect(changes.contains(#"reservations["o-1"]: removed (item: "apple", quantity: 3)"#))
        #expect(changes.contains(#"statuses["o-1"]: "reserved"→"cancelled""#))
        #expect(changes.contains("events: 5→6"))
        #expect(try open.page.string("location.hash") == "#tx=\(ids[5])")
        #expect(try open.text("#source").contains("action log \(directory.file("actions.jsonl").path)"))
        #expect(try open.text("#facts").contains("7 transactions"))
        open.expectQuiet()
    }

    @Test("j, k and the arrow keys move the selection; a click selects a row; the address follows")
    func keysAndClicks() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (path, ids) = try await inventoryPage(Events.script(), in: directory)
        let open = try OpenPage(path)
        defer { open.close() }
        #expect(try open.page.string("location.hash") == "#tx=\(ids[0])")
        for (key, index) in [("j", 1), ("j", 2), ("ArrowDown", 3), ("k", 2), ("ArrowUp", 1)] {
            try open.page.press(key)
            #expect(try open.page.waitUntil("document.body.dataset.selected === 'tx=\(ids[index])'"), "after \(key)")
            #expect(try open.text("#detail h3").hasSuffix("#\(ids[index])"))
        }
        try open.page.click(".row[data-row='4']")
        #expect(try open.page.waitUntil("location.hash === '#tx=\(ids[4])'"))
        #expect(try open.text(".row.selected .c-id") == "#\(ids[4])")
        // A link followed within the page.
        try open.page.evaluate("location.hash = '#tx=\(ids[6])'")
        #expect(try open.page.waitUntil("document.body.dataset.selected === 'tx=\(ids[6])'"))
        #expect(try open.text("#detail h3") == "cancel #\(ids[6])")
        open.expectQuiet()
    }

    @Test("the search field keeps the rows whose type, store or payload match; a store's name keeps its rows")
    func filtering() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (path, _) = try await inventoryPage(Events.script(), in: directory)
        let open = try OpenPage(path)
        defer { open.close() }
        try open.page.click("#search")
        try open.page.insertText("cancel")
        #expect(try open.page.waitUntil("document.body.dataset.filtered === 'cancel'"))
        #expect(try open.texts(".row .type") == ["cancel", "cancel"])
        // Seven transactions and the log's closing checkpoint.
        #expect(try open.text("#match-count") == "2 rows of 8")
        try open.page.press("Escape")
        #expect(try open.page.waitUntil("document.querySelectorAll('.row').length === 8"))
        try open.page.evaluate("document.getElementById('search').focus()")
        try open.page.insertText("pear")
        #expect(try open.page.waitUntil("document.body.dataset.filtered === 'pear'"))
        #expect(try open.texts(".row .c-id").count == 3)
        try open.page.press("Escape")
        // The orders store reached every event but the restocks changed nothing there; all 7 reached it.
        try open.page.click("#detail .store-name")
        #expect(try open.page.waitUntil("!document.getElementById('store-filter').hidden"))
        #expect(try open.text("#store-filter").hasPrefix("store: stock"))
        open.expectQuiet()
    }

    @Test("payloads that look like markup are shown as text: no script from the data runs, nothing is requested")
    func hostilePayloads() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let program = try NotesProgram()
        let inspector = Inspector(title: "<img src=x onerror=\"window.owned=1\">")
        program.dispatcher.register(middleware: inspector)
        let hostile = [
            "</script><script>window.owned = 2</script>", "<img src=x onerror=\"window.owned=3\">",
            "<svg onload=\"window.owned=4\"></svg>", "<!--", "\u{2028}after a separator",
        ]
        var ids: [UInt64] = []
        for text in hostile {
            ids.append(program.dispatcher.dispatch(NoteAction.add(text), mode: .sync).id)
            ids.append(program.dispatcher.dispatch(NoteAction.tag(text, weight: 1), mode: .sync).id)
        }
        let path = directory.file("hostile.html").path
        try inspector.writePage(to: path)
        let open = try OpenPage(path)
        defer { open.close() }
        for index in 0..<(hostile.count * 2) {
            try open.page.evaluate("location.hash = '#row=\(index)'")
            // A transaction's row is named by its id in the address.
            #expect(try open.page.waitUntil("document.body.dataset.selected === 'tx=\(ids[index])'"))
        }
        #expect(try open.page.evaluate("window.owned === undefined") as? Bool == true)
        #expect(
            try open.page.evaluate("document.querySelectorAll('img, svg:not(.plot), iframe, object').length") as? Int
                == 0
        )
        #expect(try open.text("#title") == "<img src=x onerror=\"window.owned=1\">")
        try open.page.evaluate("location.hash = '#row=4'")
        #expect(try open.page.waitUntil("document.body.dataset.selected === 'tx=\(ids[4])'"))
        #expect(try open.text("#detail .tree summary .kind") == #"add("<svg onload=\"window.owned=4\"></svg>")"#)
        #expect(try open.texts(".row .summary").contains(#"("<svg onload=\"window.owned=4\"></svg>")"#))
        open.expectQuiet()
    }

    @Test("the page rebuilds every store's state after every transaction of random runs exactly as the program had it")
    func exactStates() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let program = try NotesProgram()
        let inspector = Inspector()
        program.dispatcher.register(middleware: inspector)
        var random = SeededGenerator(seed: 32)
        var expected: [[String]] = []
        let words = ["alpha", "beta", "gamma", "delta", "<b>", "é"]
        for _ in 0..<250 {
            let word = words[Int.random(in: 0..<words.count, using: &random)]
            let action: NoteAction
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<4: action = .add(word)
            case 4..<7: action = .tag(word, weight: Int.random(in: 1...9, using: &random))
            case 7..<9: action = .untag(word)
            default: action = .clear
            }
            program.dispatcher.dispatch(action, mode: .sync)
            expected.append([try canonicalText(of: program.notes.state), try canonicalText(of: program.counts.state)])
        }
        let path = directory.file("random.html").path
        try inspector.writePage(to: path)
        let open = try OpenPage(path)
        defer { open.close() }
        // Backwards, then forwards, then jumps: the page's cached state moves every way.
        var order = Array((0..<250).reversed()) + Array(0..<250)
        order += (0..<100).map { _ in Int.random(in: 0..<250, using: &random) }
        let rebuilt =
            try open.page.evaluate(
                "\(order).map(row => [inspector.stateText('notes', row), inspector.stateText('counts', row)])"
            ) as? [[String]]
        let wanted = order.map { expected[$0] }
        #expect(rebuilt?.count == wanted.count)
        for (index, states) in (rebuilt ?? []).enumerated() where states != wanted[index] {
            Issue.record("row \(order[index]): the page has \(states), the program had \(wanted[index])")
        }
        open.expectQuiet()
    }
}
