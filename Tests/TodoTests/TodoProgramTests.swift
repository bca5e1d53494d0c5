import Foundation
import TestSupport
import Testing
import TodoCore

@Suite("The todo program, scripted through standard input")
struct TodoProgramTests {
    @Test("piped commands change the list, list prints it, and the file keeps it for the next run")
    func scriptedSession() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("todos.json").path
        let first = try await runTodo(["--file", file], input: "add buy milk\nadd call mom\ntoggle 1\nlist\n")
        #expect(first.status == 0)
        #expect(first.standardOutput == "1. [x] buy milk\n2. [ ] call mom\n")
        #expect(first.standardError == "")

        let json = try String(contentsOfFile: file, encoding: .utf8)
        #expect(json.contains("\"title\" : \"buy milk\""))
        #expect(json.contains("\"done\" : true"))

        let second = try await runTodo(["--file", file], input: "list\ndelete 1\nedit 1 call dad\nlist\n")
        #expect(second.standardOutput == "1. [x] buy milk\n2. [ ] call mom\n1. [ ] call dad\n")
    }

    @Test("the README's example prints what the README says")
    func readmeExample() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // README.md: printf 'add buy milk\nadd call mom\ntoggle 1\nprev\nlist\n' | swift run todo --file ...
        let output = try await runTodo(
            ["--file", directory.file("todos.json").path],
            input: "add buy milk\nadd call mom\ntoggle 1\nprev\nlist\n"
        )
        #expect(output.status == 0)
        #expect(output.standardOutput == "1. [ ] buy milk\n2. [ ] call mom\n")
        let readme = try String(contentsOf: repositoryFile("README.md"), encoding: .utf8)
        #expect(
            readme.contains(
                "printf 'add buy milk\\nadd call mom\\ntoggle 1\\nprev\\nlist\\n' | swift run todo --file /tmp/todos.json\n"
                    + "# 1. [ ] buy milk\n# 2. [ ] call mom\n"
            )
        )
    }

    @Test("prev and next step through every change")
    func previousAndNext() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let output = try await runTodo(
            ["--file", directory.file("todos.json").path],
            input: "add a\nadd b\nclear\ntoggle 2\nclear\nlist\nprev\nlist\nprev\nprev\nlist\nnext\nlist\n"
                + "prev\nprev\nprev\nlist\nprev\n"
        )
        #expect(output.status == 0)
        let expected = [
            "1. [ ] a",  // after clearing b
            "1. [ ] a", "2. [x] b",  // one change back
            "1. [ ] a", "2. [ ] b",  // three back: before toggling b (the clear with nothing done counts too)
            "1. [ ] a", "2. [ ] b",  // forward to that first clear; three back then is the empty start
        ]
        #expect(output.standardOutput.split(separator: "\n").map(String.init) == expected)
        #expect(output.standardError.contains("prev: already at the oldest change"))
    }

    @Test("an unknown command gets an error line and the program goes on")
    func unknownCommand() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let output = try await runTodo(
            ["--file", directory.file("todos.json").path],
            input: "frobnicate\nadd x\ntoggle 9\nlist\nquit\nadd never\n"
        )
        #expect(output.status == 0)
        #expect(output.standardOutput == "1. [ ] x\n")
        #expect(output.standardError.contains("line 1: unknown command 'frobnicate'"))
        #expect(output.standardError.contains("line 3: no item 9; the list has 1 item"))
        #expect(try !String(contentsOf: directory.file("todos.json"), encoding: .utf8).contains("never"))
    }

    @Test("a missing file starts empty and is created with the first change")
    func missingFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("sub/dir/todos.json")
        let output = try await runTodo(["--file", file.path], input: "list\n")
        #expect(output.status == 0)
        #expect(output.standardOutput == "")
        #expect(!FileManager.default.fileExists(atPath: file.path))
        _ = try await runTodo(["--file", file.path], input: "add first\n")
        #expect(FileManager.default.fileExists(atPath: file.path))
    }

    @Test("a corrupt file gets a clear error, a non-zero exit, and is never overwritten")
    func corruptFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("todos.json")
        let corrupt = "{\"version\": 1, \"items\": [ {\"title\": "
        try corrupt.write(to: file, atomically: true, encoding: .utf8)
        let output = try await runTodo(["--file", file.path], input: "add x\nlist\n")
        #expect(output.status != 0)
        #expect(output.standardError.hasPrefix("todo: cannot read \(file.path): it is not a valid todo file ("))
        #expect(output.standardOutput == "")
        #expect(try String(contentsOf: file, encoding: .utf8) == corrupt)
    }

    @Test("without --file the list lives under XDG_DATA_HOME")
    func defaultFile() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try await runTodo([], input: "add via xdg\n", environment: ["XDG_DATA_HOME": directory.url.path])
        let file = directory.file("dispatch-todo/todos.json")
        #expect(try String(contentsOf: file, encoding: .utf8).contains("via xdg"))
    }

    @Test("--help documents the keys, the commands, the file, NO_COLOR and the exit status")
    func help() async throws {
        let help = try await runTodo(["--help"])
        #expect(help.status == 0)
        for needle in [
            "--file PATH", "p          previous", "n          next", "history N/M", "add TITLE", "edit N TITLE",
            "toggle N", "delete N", "prev", "list", "quit", "NO_COLOR", "XDG_DATA_HOME", "Esc cancels",
            "Ctrl-Z", "Ctrl-U", "Ctrl-W", "Home End", "Pasted text", "exit status",
        ] {
            #expect(help.standardOutput.contains(needle), "help lacks \(needle)")
        }
    }

    @Test(
        "a bad argument gets a two-line usage error pointing at --help, and exit status 64",
        arguments: [
            (["--frobnicate"], "todo: unknown option '--frobnicate'"),
            (["--file"], "todo: --file needs a path"),
            (["--file="], "todo: --file needs a path"),
            (["--file", "a.json", "stray"], "todo: unexpected argument 'stray'; the list's file goes after --file"),
            (["--report="], "todo: --report needs a path"),
        ]
    )
    func badArguments(arguments: [String], problem: String) async throws {
        let output = try await runTodo(arguments)
        #expect(output.status == 64)
        #expect(output.standardOutput == "")
        #expect(
            output.standardError.split(separator: "\n").map(String.init) == [
                problem, "usage: todo [--file PATH] [--report PAGE.html]; todo --help lists the keys and commands",
            ]
        )
    }

    @Test("a failed save names the file and the reason on standard error, keeps the list, and exits 1")
    func saveFailure() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.file("blocker")
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        let file = blocker.appendingPathComponent("todos.json").path
        let output = try await runTodo(["--file", file], input: "add milk\nadd bread\nlist\n")
        #expect(output.status == 1)
        #expect(output.standardOutput == "1. [ ] milk\n2. [ ] bread\n")
        let reason = "cannot save \(file): \(blocker.path) is a file, not a directory"
        #expect(
            output.standardError.split(separator: "\n").map(String.init) == [
                "todo: notice: \(reason); the list starts empty, and each change tries again",
                "todo: line 1: \(reason); the next change tries again",
                "todo: line 2: \(reason); the next change tries again",
                "todo: \(reason); the changes since the last save are lost",
            ]
        )
        #expect(!output.standardError.contains("already exists"))
    }

    @Test("after a failed save the next change tries again, and a success is reported; the exit status stays 1")
    func saveRetried() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.file("blocker")
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        let file = blocker.appendingPathComponent("todos.json").path
        let program = try RunningProgram("todo", ["--file", file])
        let notice = await offThePool { program.nextErrorLine() }
        #expect(notice?.hasPrefix("todo: notice: cannot save \(file): \(blocker.path) is a file") == true)
        program.write(Data("add milk\n".utf8))
        let first = await offThePool { program.nextErrorLine() }
        #expect(
            first
                == "todo: line 1: cannot save \(file): \(blocker.path) is a file, not a directory; the next change tries again"
        )
        try FileManager.default.removeItem(at: blocker)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        program.write(Data("add bread\n".utf8))
        let second = await offThePool { program.nextErrorLine() }
        #expect(second == "todo: line 2: the list is saved again")
        program.closeInput()
        let output = await offThePool { program.wait() }
        #expect(output.status == 1)
        #expect(!output.standardError.contains("Sanitizer"), "todo reported:\n\(output.standardError)")
        #expect(try TodoStorage(url: URL(fileURLWithPath: file)).load().map(\.title) == ["milk", "bread"])
    }
}
