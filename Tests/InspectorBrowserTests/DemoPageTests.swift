import BrowserDriver
import DispatchStore
import DispatchStoreInspector
import DispatchStoreJournal
import Foundation
import InventoryCore
import TestSupport
import Testing

@Suite(
    "The demos' pages in headless Chromium",
    .serialized,
    .enabled(
        if: HeadlessBrowser.isAvailable,
        "Chromium is not installed (apt-get install chromium): the browser tests are skipped"
    )
)
struct DemoPageTests {
    @Test("todo --report: the recorder's moves are rows, and the transaction undone at the end is marked")
    func todoSession() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("todo.html").path
        try await runDemo(
            "todo",
            ["--file", directory.file("todos.json").path, "--report", path],
            input: "add buy milk\nadd call mom\ntoggle 1\nprev\nprev\nnext\n"
        )
        let open = try OpenPage(path)
        defer { open.close() }
        let moves = try open.texts(".row.restore .c-action").map { $0.prefix(7) }
        #expect(moves == ["↶ undo:", "↶ undo:", "↶ redo:"])
        // The toggle's entry is after the recorder's position: undone at the end.
        #expect(try open.texts(".row.undone .type") == ["toggle"])
        #expect(
            try open.text("#notices").contains(
                "the stores are at history entry 2 (entries 0 to 3); 1 transaction undone at the end"
            )
        )
        try open.page.click(".row.undone")
        #expect(try open.page.waitUntil("document.body.dataset.selected.startsWith('tx=')"))
        #expect(try open.text("#detail .meta").contains("history entry 3, undone at the end"))
        try open.page.click(".row.restore")
        #expect(try open.page.waitUntil("document.body.dataset.selected.startsWith('row=')"))
        #expect(try open.text("#detail h3") == "States restored")
        #expect(try open.texts(".change").contains { $0.hasPrefix("items[0].isDone: true→false") })
        open.expectQuiet()
    }

    @Test("inventory --data --report: the snapshot recovery started from is the first row, the records after it follow")
    func journal() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.file("data").path
        let path = directory.file("data.html").path
        let events = Events.script(filler: 60).joined(separator: "\n") + "\n"
        try await runDemo("inventory", ["--data", data, "--snapshot-every", "50", "--quiet"], input: events)
        try await runDemo(
            "inventory",
            ["--data", data, "--report", path, "--quiet"],
            input: Events.restock("kiwi", 5) + "\n"
        )
        let open = try OpenPage(path, fragment: "#row=0")
        defer { open.close() }
        #expect(try open.text(".row.marker .c-action").hasPrefix("◆ Snapshot 2: the states after 67 records"))
        #expect(try open.text("#detail h3") == "Snapshot")
        // The snapshot's states are on the page: the stock holds the kiwi-less stock of 67 events.
        #expect(try open.texts(".change").contains { $0.hasPrefix("available.fig: added ") })
        #expect(try open.text("#source").contains("journal \(data)"))
        #expect(try open.text("#notices").contains("recovered 67 records"))
        open.expectQuiet()
    }

    @Test("a damaged log: the header lists each problem, a link shows its row; the rows say what is wrong")
    func damagedLog() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let log = directory.file("actions.jsonl").path
        let path = directory.file("damaged.html").path
        try await runDemo(
            "inventory",
            ["--log", log, "--quiet"],
            input: Events.script().joined(separator: "\n") + "\n"
        )
        var lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.insert("{ not json", at: 2)
        lines[4] = lines[4].replacingOccurrences(of: "InventoryCore.InventoryAction", with: "Elsewhere.Action")
        try (lines.joined(separator: "\n") + "\n{\"id\":99").write(toFile: log, atomically: true, encoding: .utf8)
        try await runDemo("inventory", ["--replay", log, "--report", path, "--quiet"], status: 1)
        let open = try OpenPage(path)
        defer { open.close() }
        // The three lines, then what they cost: each store stops at the action the unreadable line held.
        #expect(try open.text("#problems-summary") == "6 problems")
        let problems = try open.texts("#problem-list li")
        #expect(problems.count == 6)
        #expect(problems[0].contains("Line 3 of \(log)"))
        #expect(problems[1].contains("Elsewhere.Action"))
        #expect(problems[2].contains("The last line, line 10"))
        for (index, store) in ["stock", "orders", "audit"].enumerated() {
            #expect(problems[3 + index].contains("'\(store)' stopped after sequence number 3"))
        }
        try open.page.evaluate("document.getElementById('problems').open = true")
        try open.page.click("#problem-list li:nth-child(2) a")
        #expect(try open.page.waitUntil("document.body.dataset.selected === 'row=4'"))
        #expect(try open.text("#detail h3") == "An unknown action type")
        #expect(try open.texts(".row.problem .c-id") == ["line 3", "line 5", "line 10"])
        open.expectQuiet()
    }

    @Test(
        "12,000 transactions: only the rows in view are in the document, scrolling draws the others, the plots are drawn"
    )
    func largePage() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let program = try NotesProgram()
        let inspector = Inspector(limit: 12_000)
        program.dispatcher.register(middleware: inspector)
        let ids = (0..<12_000).map { index in
            program.dispatcher.dispatch(NoteAction.tag("tag \(index % 50)", weight: index % 7), mode: .sync).id
        }
        let path = directory.file("large.html").path
        try inspector.writePage(to: path)
        let open = try OpenPage(path)
        defer { open.close() }
        let drawn = try open.page.evaluate("document.querySelectorAll('.row').length") as? Int ?? 0
        #expect(drawn > 10 && drawn < 120)
        try open.page.evaluate("document.getElementById('timeline').scrollTop = 24 * 9000")
        #expect(try open.page.waitUntil("document.querySelector(\".row[data-row='9000']\") !== null"))
        #expect(try open.page.evaluate("document.querySelectorAll('.row').length") as? Int ?? 0 < 120)
        #expect(try open.page.waitUntil("document.body.dataset.plots === 'drawn'"))
        #expect(
            try open.page.evaluate("document.querySelectorAll('#rate-plot rect, #duration-plot rect').length") as? Int
                ?? 0 > 2
        )
        // A link to a transaction far away scrolls it into view and selects it.
        try open.page.evaluate("location.hash = '#tx=\(ids[11_000])'")
        #expect(
            try open.page.waitUntil("document.querySelector('.row.selected .c-id')?.textContent === '#\(ids[11_000])'")
        )
        #expect(try open.text("#facts").contains("12,000 transactions"))
        #expect(try open.text("#detail h3") == "tag #\(ids[11_000])")
        open.expectQuiet()
    }
}
