import Foundation
import TestSupport
import Testing

@Suite("The todo program's page (--report)")
struct TodoReportTests {
    @Test(
        "piped commands: the page is written at quit, with every action, the moves back and forth and what was undone"
    )
    func lineMode() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let page = directory.file("session.html").path
        let output = try await runTodo(
            ["--file", directory.file("todos.json").path, "--report", page],
            input: "add buy milk\nadd call mom\ntoggle 1\nprev\nprev\nnext\nlist\n"
        )
        #expect(output.status == 0)
        #expect(output.standardError.hasPrefix("todo: the page \(page) shows "))
        let read = try InspectorPage(path: page)
        // add, add, toggle; the moves (undo, undo, redo) are rows of their own, each a message after it.
        let kinds = read.rowKinds
        #expect(kinds.filter { $0 == 3 }.count == 3)
        let moves = read.rows.filter { ($0[0] as? NSNumber)?.intValue == 3 }.map { ($0[2] as? String)?.prefix(4) }
        #expect(moves == ["undo", "undo", "redo"])
        let recorder = try #require(read.data["recorder"] as? [String: Any])
        #expect(recorder["current"] as? Int == 2)
        let entries = read.transactionExtras.compactMap { $0["entry"] as? Int }
        #expect(entries == [1, 2, 3])
        // The toggle (entry 3) is undone at the end: after the recorder's entry.
        #expect((recorder["entries"] as? [[Any]])?.map { ($0[0] as? NSNumber)?.intValue } == [0, 1, 2, 3])
    }

    @Test("in a terminal: the page is written at quit, after the terminal is restored")
    func terminal() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let page = directory.file("session.html").path
        let session = try TerminalSession(["--file", directory.file("todos.json").path, "--report", page])
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        session.press("a")
        session.press("buy milk\r")
        #expect(
            await session.waitForFrame(
                screen([" Todo  1 item, 0 done", "", "> [ ] buy milk"], status: " history 1/1  Added “buy milk”")
            )
        )
        session.press("p")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/1  Undid: Added “buy milk”")))
        session.press("q")
        #expect(await session.waitForExit() == 0)
        #expect(session.rawOutput.contains(TerminalSequence.leave + "todo: the page \(page) shows "))
        let read = try InspectorPage(path: page)
        #expect(read.rowKinds.contains(3))
        let recorder = try #require(read.data["recorder"] as? [String: Any])
        #expect(recorder["current"] as? Int == 0)
    }

    @Test("a --report path that cannot be written is refused before the session starts")
    func badPath() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let output = try await runTodo(
            ["--file", directory.file("todos.json").path, "--report", directory.url.path],
            input: "add x\n"
        )
        #expect(output.status == 1)
        #expect(output.standardError == "todo: Cannot write the page \(directory.url.path): it is a directory.\n")
        #expect(!FileManager.default.fileExists(atPath: directory.file("todos.json").path))
        let missing = try await runTodo(["--report"], input: "")
        #expect(missing.status == 64 && missing.standardError.hasPrefix("todo: --report needs a path\n"))
    }
}
