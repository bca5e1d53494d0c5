import Foundation
import TestSupport
import Testing
import TodoCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keys as a terminal sends them.
private enum Keys {
    static let up = "\u{1B}[A"
    static let left = "\u{1B}[D"
    static let right = "\u{1B}[C"
    static let home = "\u{1B}[H"
    static let end = "\u{1B}[F"
    static let delete = "\u{1B}[3~"
    static let backspace = "\u{7F}"
    static let escape = "\u{1B}"
    static let controlA = "\u{1}"
    static let controlC = "\u{3}"
    static let controlE = "\u{5}"
    static let controlU = "\u{15}"
    static let controlW = "\u{17}"
    static let controlZ = "\u{1A}"
}

@Suite("The todo program in a terminal")
struct TodoTerminalTests {
    @Test("press a, type a title, Enter, then p and n: the screen follows and the terminal is restored")
    func addThenPreviousAndNext() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("todos.json").path
        let session = try TerminalSession(file: file)

        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        #expect(session.rawOutput.hasPrefix(TerminalSequence.enter))
        session.press("a")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0", bottom: " Title:")))
        session.press("buy milk")
        #expect(
            await session.waitForFrame(
                screen(emptyList, status: " history 0/0", bottom: " Title: buy milk"),
                cursor: .init(row: 10, column: 17)
            )
        )
        session.press("\r")
        let added = [" Todo  1 item, 0 done", "", "> [ ] buy milk"]
        #expect(await session.waitForFrame(screen(added, status: " history 1/1  Added “buy milk”")))

        session.press("p")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/1  Undid: Added “buy milk”")))
        session.press("n")
        #expect(await session.waitForFrame(screen(added, status: " history 1/1  Redid: Added “buy milk”")))

        session.press(" ")
        #expect(
            await session.waitForFrame(
                screen([" Todo  1 item, 1 done", "", "> [x] buy milk"], status: " history 2/2  Done: “buy milk”")
            )
        )
        session.press("q")
        #expect(await session.waitForExit() == 0)
        #expect(session.rawOutput.hasSuffix(TerminalSequence.leave))
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\"title\" : \"buy milk\""))
    }

    @Test("arrow keys move, d deletes, Esc cancels a prompt, and the list survives a restart")
    func moreKeys() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("todos.json").path
        let session = try TerminalSession(file: file)
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        var titles: [String] = []
        for title in ["one", "two", "three"] {
            session.press("a")
            #expect(await session.waitForOutput(containing: "Title:"))
            session.press("\(title)\r")
            titles.append(title)
            let lines = titles.enumerated().map { "\($0.offset == titles.count - 1 ? ">" : " ") [ ] \($0.element)" }
            let top = [" Todo  \(titles.count) item\(titles.count == 1 ? "" : "s"), 0 done", ""] + lines
            #expect(
                await session.waitForFrame(
                    screen(top, status: " history \(titles.count)/\(titles.count)  Added “\(title)”")
                )
            )
        }
        session.press(Keys.up)
        #expect(
            await session.waitForFrame(
                screen(
                    [" Todo  3 items, 0 done", "", "  [ ] one", "> [ ] two", "  [ ] three"],
                    status: " history 3/3  Added “three”"
                )
            )
        )
        session.press("d")
        let afterDelete = [" Todo  2 items, 0 done", "", "  [ ] one", "> [ ] three"]
        #expect(await session.waitForFrame(screen(afterDelete, status: " history 4/4  Deleted “two”")))
        session.press("a")
        #expect(await session.waitForFrame(screen(afterDelete, status: " history 4/4", bottom: " Title:")))
        session.press("never" + Keys.escape)
        #expect(await session.waitForFrame(screen(afterDelete, status: " history 4/4  Nothing added")))
        session.press("q")
        #expect(await session.waitForExit() == 0)

        let again = try TerminalSession(file: file)
        #expect(
            await again.waitForFrame(
                screen([" Todo  2 items, 0 done", "", "> [ ] one", "  [ ] three"], status: " history 0/0")
            )
        )
        again.press(Keys.controlC)
        #expect(await again.waitForExit() == 0)
        #expect(again.rawOutput.hasSuffix(TerminalSequence.leave))
    }

    @Test("keys that do nothing say so; an empty title is refused with a message")
    func feedback() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path)
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        for (key, message) in [
            ("d", "Nothing to delete: the list is empty"),
            (" ", "Nothing to mark done: the list is empty"),
            ("e", "Nothing to edit: the list is empty"),
            ("j", "Nothing to move to: the list is empty"),
            ("c", "No done items to clear"),
            ("p", "Already at the oldest change"),
            ("z", "“z” does nothing here; press ? for the keys"),
        ] {
            session.press(key)
            #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0  \(message)")), "key \(key)")
        }
        session.press("a")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0", bottom: " Title:")))
        session.press("\r")
        #expect(
            await session.waitForFrame(screen(emptyList, status: " history 0/0  Nothing added: the title was empty"))
        )

        session.press("atea\r")
        let tea = [" Todo  1 item, 0 done", "", "> [ ] tea"]
        #expect(await session.waitForFrame(screen(tea, status: " history 1/1  Added “tea”")))
        session.press("k")
        #expect(await session.waitForFrame(screen(tea, status: " history 1/1  Already at the first item")))
        session.press("j")
        #expect(await session.waitForFrame(screen(tea, status: " history 1/1  Already at the last item")))

        session.press("e")
        #expect(
            await session.waitForFrame(
                screen(tea, status: " history 1/1", bottom: " New title: tea"),
                cursor: .init(row: 10, column: 16)
            )
        )
        session.press(Keys.controlU + "\r")
        #expect(
            await session.waitForFrame(
                screen(
                    tea,
                    status: " history 1/1  A title cannot be empty: type one, or press Esc to keep “tea”",
                    bottom: " New title:"
                ),
                cursor: .init(row: 10, column: 13)
            )
        )
        session.press(Keys.escape)
        #expect(await session.waitForFrame(screen(tea, status: " history 1/1  Edit cancelled; “tea” is unchanged")))
        session.press("e\r")
        #expect(await session.waitForFrame(screen(tea, status: " history 1/1  “tea” is unchanged")))
        session.press("q")
        #expect(await session.waitForExit() == 0)
    }

    @Test("the prompt edits with Left, Right, Home, End, Backspace, Delete, Ctrl-A, Ctrl-E, Ctrl-U and Ctrl-W")
    func promptEditing() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path)
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        session.press("a")
        // Each step: the keys, then the prompt's text and the cursor's column (the text starts at 9).
        let steps: [(String, String, Int)] = [
            ("buy milk now", "buy milk now", 21),
            (Keys.controlW, "buy milk", 18),  // the space before the cursor stays
            (Keys.controlW, "buy", 13),
            ("bread", "buy bread", 18),
            (Keys.left + Keys.left + Keys.left + Keys.left + Keys.left, "buy bread", 13),
            ("rye ", "buy rye bread", 17),
            (Keys.home, "buy rye bread", 9),
            (Keys.delete, "uy rye bread", 9),
            (Keys.right, "uy rye bread", 10),
            (Keys.backspace, "y rye bread", 9),
            (Keys.end, "y rye bread", 20),
            (Keys.controlA, "y rye bread", 9),
            (Keys.controlE, "y rye bread", 20),
            (Keys.left + Keys.controlU, "d", 9),
            (Keys.controlE + Keys.backspace + "tea", "tea", 12),
        ]
        for (keys, text, column) in steps {
            session.press(keys)
            #expect(
                await session.waitForFrame(
                    screen(emptyList, status: " history 0/0", bottom: " Title: \(text)"),
                    cursor: .init(row: 10, column: column)
                ),
                "after \(keys.debugDescription)"
            )
        }
        session.press("\r")
        #expect(
            await session.waitForFrame(
                screen([" Todo  1 item, 0 done", "", "> [ ] tea"], status: " history 1/1  Added “tea”")
            )
        )
        session.press("q")
        #expect(await session.waitForExit() == 0)
    }

    @Test("wide characters, emoji and combining marks are laid out by display width; long text is cut with …")
    func displayWidth() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path, columns: 30)
        let keys = " a add  e edit  space toggle …"
        let empty = [" Todo  0 items, 0 done", "", "  Nothing to do. Press a to a…"]
        #expect(await session.waitForFrame(screen(empty, status: " history 0/0", bottom: keys)))
        // The title, and the cursor's column after it: " Title: " takes 8 columns.
        let titles: [(String, Int)] = [("日本語", 15), ("e\u{301}te\u{301}", 12), ("👍🏽", 13)]
        var lines: [String] = []
        for (title, column) in titles {
            session.press("a" + title)
            #expect(
                await session.waitForFrame(
                    screen(
                        [" Todo  \(lines.count) item\(lines.count == 1 ? "" : "s"), 0 done", ""]
                            + (lines.isEmpty ? [empty[2]] : lines),
                        status: " history \(lines.count)/\(lines.count)",
                        bottom: " Title: \(title)"
                    ),
                    cursor: .init(row: 10, column: column)
                ),
                "typing \(title)"
            )
            session.press("\r")
            lines = lines.map { " " + $0.dropFirst() } + ["> [ ] \(title)"]
            #expect(await session.waitForOutput(containing: "Added “\(title)”"))
        }

        // Wider than the prompt: the text scrolls, and … marks the hidden part.
        let long = "日本語のとても長いタイトルです"
        session.press("a" + long)
        // Opening the prompt cleared the message.
        let status = " history 3/3"
        let top = [" Todo  3 items, 0 done", ""] + lines
        #expect(
            await session.waitForFrame(
                screen(top, status: status, bottom: " Title: …ても長いタイトルです"),
                cursor: .init(row: 10, column: 30)
            )
        )
        session.press(Keys.home)
        #expect(
            await session.waitForFrame(
                screen(top, status: status, bottom: " Title: 日本語のとても長いタ…"),
                cursor: .init(row: 10, column: 9)
            )
        )
        session.press("\r")
        let cut = lines.map { " " + $0.dropFirst() } + ["> [ ] 日本語のとても長いタイ…"]
        #expect(
            await session.waitForFrame(
                screen([" Todo  4 items, 0 done", ""] + cut, status: " history 4/4  Added “日本語の…", bottom: keys)
            )
        )
        session.press("q")
        #expect(await session.waitForExit() == 0)
    }

    @Test("pasted text is text: several lines at the add prompt add several items, never run as keys")
    func bracketedPaste() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path)
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        #expect(session.rawOutput.contains("\u{1B}[?2004h"))

        session.press("a")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0", bottom: " Title:")))
        session.paste("milk\r\nbread\n  \neggs\n")
        let three = [" Todo  3 items, 0 done", "", "  [ ] milk", "  [ ] bread", "> [ ] eggs"]
        // One paste is one step of the history.
        #expect(await session.waitForFrame(screen(three, status: " history 1/1  Added 3 items from the paste")))

        // Pasted outside a prompt: not keys (no delete, no quit).
        session.paste("dq")
        #expect(
            await session.waitForFrame(
                screen(three, status: " history 1/1  Pasted text goes into a prompt: press a, then paste")
            )
        )

        // One line goes in at the cursor; with more lines the text typed before joins the first.
        session.press("ato" + Keys.home)
        session.paste("go ")
        #expect(
            await session.waitForFrame(
                screen(three, status: " history 1/1", bottom: " Title: go to"),
                cursor: .init(row: 10, column: 12)
            )
        )
        session.press(Keys.end + " ")
        session.paste("d\nq")
        let five = three.map { $0.replacingOccurrences(of: ">", with: " ") }.dropFirst(2)
        let top = [" Todo  5 items, 0 done", ""] + five + ["  [ ] go to d", "> [ ] q"]
        #expect(await session.waitForFrame(screen(Array(top), status: " history 2/2  Added 2 items from the paste")))

        // At the edit prompt the line breaks become spaces.
        session.press("e")
        session.paste("uit\nnow")
        #expect(
            await session.waitForFrame(
                screen(
                    Array(top),
                    status: " history 2/2  The pasted line breaks became spaces",
                    bottom: " New title: quit now"
                )
            )
        )
        session.press("\r")
        #expect(await session.waitForOutput(containing: "Renamed “q” to “quit now”"))
        session.press("q")
        #expect(await session.waitForExit() == 0)
        #expect(session.rawOutput.hasSuffix(TerminalSequence.leave))
    }

    @Test("a paste of several lines at the add prompt is one undo step: p takes every item back, n brings them all")
    func pasteIsOneUndoStep() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path)
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))

        session.press("a")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0", bottom: " Title:")))
        session.press("tea\r")
        let one = [" Todo  1 item, 0 done", "", "> [ ] tea"]
        #expect(await session.waitForFrame(screen(one, status: " history 1/1  Added “tea”")))

        session.press("a")
        #expect(await session.waitForFrame(screen(one, status: " history 1/1", bottom: " Title:")))
        session.paste("milk\nbread\neggs")
        let four = [" Todo  4 items, 0 done", "", "  [ ] tea", "  [ ] milk", "  [ ] bread", "> [ ] eggs"]
        #expect(await session.waitForFrame(screen(four, status: " history 2/2  Added 3 items from the paste")))

        session.press("p")
        #expect(await session.waitForFrame(screen(one, status: " history 1/2  Undid: Added “eggs” and 2 more changes")))
        session.press("n")
        #expect(
            await session.waitForFrame(screen(four, status: " history 2/2  Redid: Added “eggs” and 2 more changes"))
        )
        session.press("pp")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/2  Undid: Added “tea”")))

        session.press("q")
        #expect(await session.waitForExit() == 0)
        // The file follows the list: empty after the undos.
        #expect(try TodoStorage(url: directory.file("todos.json")).load().isEmpty)
    }

    @Test("Ctrl-Z and SIGTSTP give the terminal back and stop; SIGCONT takes it again and redraws")
    func suspendAndResume() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path)
        let prompt = screen(emptyList, status: " history 0/0", bottom: " Title: half")
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        session.press("ahalf")
        #expect(await session.waitForFrame(prompt, cursor: .init(row: 10, column: 13)))
        #expect(try session.isRaw())

        for stop in [{ session.press(Keys.controlZ) }, { session.send(signal: SIGTSTP) }] {
            stop()
            #expect(await session.waitForOutput(containing: TerminalSequence.leave))
            #expect(await session.waitUntil(stopped: true))
            #expect(try !session.isRaw(), "the terminal's settings are restored while stopped")

            session.send(signal: SIGCONT)
            #expect(await session.waitUntil(stopped: false))
            #expect(await session.waitForOutput(containing: TerminalSequence.enter))
            #expect(await session.waitForFrame(prompt, cursor: .init(row: 10, column: 13)))
            #expect(try session.isRaw())
        }
        session.press("\r")
        #expect(
            await session.waitForFrame(
                screen([" Todo  1 item, 0 done", "", "> [ ] half"], status: " history 1/1  Added “half”")
            )
        )
        session.press("q")
        #expect(await session.waitForExit() == 0)
    }

    @Test("a failed save shows in the status line with the file and the reason, keeps the list, and is retried")
    func saveFailure() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.file("blocker")
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        let file = blocker.appendingPathComponent("todos.json").path
        let session = try TerminalSession(file: file, columns: 300)
        let notice = "Cannot save \(file): \(blocker.path) is a file, not a directory; each change tries again"
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0  \(notice)")))

        session.press("amilk\r")
        let failure = "Not saved, will retry: \(file): \(blocker.path) is a file, not a directory"
        let milk = [" Todo  1 item, 0 done", "", "> [ ] milk", "", "", "", "", "  Added “milk”"]
        #expect(await session.waitForFrame(screen(milk, status: " history 1/1  \(failure)")))

        // Quitting tries again; while it still fails, a second q is needed.
        session.press("q")
        var asked = milk
        asked[7] = "  The list is not saved. Press q again to quit without saving it"
        #expect(await session.waitForFrame(screen(asked, status: " history 1/1  \(failure)")))

        // Fixed: the next change saves everything.
        try FileManager.default.removeItem(at: blocker)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        session.press("x")
        #expect(
            await session.waitForFrame(
                screen([" Todo  1 item, 1 done", "", "> [x] milk"], status: " history 2/2  Done: “milk”")
            )
        )
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\"done\" : true"))

        // Broken again, then fixed before quitting: quitting saves.
        try FileManager.default.removeItem(at: blocker)
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        session.press("abread\r")
        #expect(await session.waitForOutput(containing: failure))
        try FileManager.default.removeItem(at: blocker)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        session.press("q")
        #expect(await session.waitForExit() == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("bread"))
    }

    @Test("quitting twice with the list unsaved exits 1 and says so after restoring the terminal")
    func quitUnsaved() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.file("blocker")
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        let file = blocker.appendingPathComponent("todos.json").path
        let session = try TerminalSession(file: file, columns: 300)
        let notice = "Cannot save \(file): \(blocker.path) is a file, not a directory; each change tries again"
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0  \(notice)")))
        session.press("amilk\r")
        #expect(await session.waitForOutput(containing: "Not saved, will retry"))
        session.press("q")
        #expect(await session.waitForOutput(containing: "Press q again"))
        session.press("q")
        #expect(await session.waitForExit() == 1)
        let message =
            "todo: cannot save \(file): \(blocker.path) is a file, not a directory;"
            + " the changes since the last save are lost"
        #expect(session.rawOutput.hasSuffix(TerminalSequence.leave + message + "\r\n"))
    }

    @Test("SIGTERM with the list unsaved tries once more, then says the changes are lost")
    func terminateUnsaved() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.file("blocker")
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        let file = blocker.appendingPathComponent("todos.json").path
        let session = try TerminalSession(file: file, columns: 300)
        let notice = "Cannot save \(file): \(blocker.path) is a file, not a directory; each change tries again"
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0  \(notice)")))
        session.press("amilk\r")
        #expect(await session.waitForOutput(containing: "Not saved, will retry"))
        session.send(signal: SIGTERM)
        #expect(await session.waitForExit() == 128 + SIGTERM)
        let message =
            "todo: cannot save \(file): \(blocker.path) is a file, not a directory;"
            + " the changes since the last save are lost"
        #expect(session.rawOutput.hasSuffix(TerminalSequence.leave + message + "\r\n"))
    }

    @Test("NO_COLOR turns the text styles off")
    func noColor() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for (environment, styled) in [(["NO_COLOR": ""], true), (["NO_COLOR": "1"], false)] {
            let session = try TerminalSession(file: directory.file("todos.json").path, environment: environment)
            #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
            session.press("q")
            #expect(await session.waitForExit() == 0)
            #expect(session.rawOutput.contains("\u{1B}[1m") == styled)
        }
    }

    @Test("SIGTERM restores the terminal before the program exits")
    func terminate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path)
        #expect(await session.waitForFrame(screen(emptyList, status: " history 0/0")))
        session.send(signal: SIGTERM)
        #expect(await session.waitForExit() == 128 + SIGTERM)
        #expect(session.rawOutput.hasSuffix(TerminalSequence.leave))
    }

    @Test("with standard output redirected, a notice on standard error says commands are read line by line")
    func lineModeNotice() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(
            ["--file", directory.file("todos.json").path],
            standardOutputToPipe: true
        )
        #expect(
            await session.waitForOutput(
                containing: "todo: standard output is not a terminal, so commands are read line by line (type help)\r\n"
            )
        )
        session.press("add x\nlist\n\u{4}")
        #expect(await session.waitForExit() == 0)
        #expect(await offThePool { session.pipedOutput() } == "1. [ ] x\n")
        #expect(!session.rawOutput.contains(TerminalSequence.enter))
    }
}
