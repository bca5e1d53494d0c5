import DispatchStore
import Foundation
import TestSupport
import Testing
import TodoCore

@Suite("Todo model: reducers and the two stores")
struct TodoModelTests {
    @Test("list changes update the list and the interface, which waits for the list")
    func listChanges() throws {
        let app = try TodoApp()
        app.perform(.add(title: "milk"))
        app.perform(.add(title: "bread"))
        #expect(app.list.state.items.map(\.title) == ["milk", "bread"])
        #expect(app.interface.state.cursor == 1)
        #expect(app.interface.state.message == "Added “bread”")

        app.perform(.toggle(id: 1))
        #expect(app.list.state.items[0].isDone)
        #expect(app.interface.state.message == "Done: “milk”")
        app.perform(.edit(id: 2, title: "rye bread"))
        #expect(app.list.state.items[1].title == "rye bread")
        app.perform(.delete(id: 2))
        #expect(app.interface.state.cursor == 0)
        #expect(app.interface.state.message == "Deleted “rye bread”")
        app.perform(.clearDone)
        #expect(app.list.state.items.isEmpty)
        #expect(app.interface.state.message == "Cleared 1 done item")
        #expect(app.interface.state.cursor == 0)
    }

    @Test("interface actions reach only the interface store and are not recorded")
    func interfaceActions() throws {
        let app = try TodoApp(items: [TodoItem(id: 1, title: "a"), TodoItem(id: 2, title: "b")])
        app.perform(.moveCursor(by: 5))
        #expect(app.interface.state.cursor == 1)
        app.perform(.moveCursor(by: -9))
        #expect(app.interface.state.cursor == 0)
        app.perform(.setMode(.adding))
        #expect(app.interface.state.mode == .adding)
        #expect(app.recorder.count == 1)
        #expect(app.historyLabel == "history 0/0")
    }

    @Test("the cursor stays within the list after an undo or a redo changes its length")
    func cursorAfterHistoryMoves() throws {
        let app = try TodoApp(items: [TodoItem(id: 1, title: "a"), TodoItem(id: 2, title: "b")])
        app.perform(.add(title: "c"))
        app.perform(.delete(id: 3))
        app.perform(.delete(id: 2))
        #expect(app.interface.state.itemCount == 1)
        #expect(app.previous())
        #expect(app.previous())
        // The list has three items again: the interface's count came back with it.
        #expect(app.interface.state.itemCount == 3)
        app.perform(.moveCursor(by: 9))
        #expect(app.interface.state.cursor == 2)
        #expect(app.next())
        #expect(app.next())
        app.perform(.moveCursor(by: 9))
        #expect(app.interface.state.cursor == 0)
        #expect(app.selectedItem?.title == "a")
    }

    @Test("previous and next step through the list changes, with a message")
    func history() throws {
        let app = try TodoApp(items: [TodoItem(id: 7, title: "start")])
        app.perform(.add(title: "a"))
        app.perform(.toggle(id: 7))
        #expect(app.historyLabel == "history 2/2")
        #expect(app.previous())
        #expect(app.interface.state.message == "Undid: Done: “start”")
        #expect(app.previous())
        #expect(app.list.state.items.map(\.title) == ["start"])
        #expect(!app.previous())
        #expect(app.historyLabel == "history 0/2")
        #expect(app.next())
        #expect(app.interface.state.message == "Redid: Added “a”")
        #expect(app.list.state.items.map(\.title) == ["start", "a"])
        #expect(app.list.state.nextID == 9)
    }

    @Test("changes performed as one step are undone and redone together")
    func oneStep() throws {
        let app = try TodoApp()
        app.perform(.add(title: "first"))
        app.performAsOneStep([.add(title: "a"), .add(title: "b"), .moveCursor(by: -1), .add(title: "c")])
        #expect(app.list.state.items.map(\.title) == ["first", "a", "b", "c"])
        #expect(app.historyLabel == "history 2/2")
        #expect(app.recorder.currentEntry?.transactionCount == 3)

        #expect(app.previous())
        #expect(app.list.state.items.map(\.title) == ["first"])
        #expect(app.interface.state.message == "Undid: Added “c” and 2 more changes")
        #expect(app.historyLabel == "history 1/2")
        #expect(app.next())
        #expect(app.list.state.items.map(\.title) == ["first", "a", "b", "c"])
        #expect(app.interface.state.message == "Redid: Added “c” and 2 more changes")

        // A step of one change reads as before.
        app.performAsOneStep([.add(title: "d")])
        #expect(app.previous())
        #expect(app.interface.state.message == "Undid: Added “d”")
    }
}

@Suite("Todo line commands")
struct CommandTests {
    @Test(
        "every command parses",
        arguments: [
            ("add buy milk", Command.add("buy milk")),
            ("  edit 2   new title ", .edit(2, "new title")),
            ("toggle 1", .toggle(1)),
            ("delete 3", .delete(3)),
            ("clear", .clear),
            ("prev", .previous),
            ("next", .next),
            ("list", .list),
            ("help", .help),
            ("quit", .quit),
        ]
    )
    func parses(line: String, command: Command) throws {
        #expect(try Command.parse(line) == command)
    }

    @Test("blank and comment lines are not commands")
    func blanks() throws {
        #expect(try Command.parse("") == nil)
        #expect(try Command.parse("   ") == nil)
        #expect(try Command.parse("# a note") == nil)
    }

    @Test(
        "bad lines get an error naming the problem",
        arguments: [
            ("frobnicate", "unknown command 'frobnicate'"),
            ("add", "add needs a title"),
            ("edit 2", "edit needs an item number and a title"),
            ("toggle x", "'x' is not an item number"),
            ("delete 0", "'0' is not an item number"),
            ("list all", "list takes no argument"),
        ]
    )
    func errors(line: String, message: String) {
        #expect {
            try Command.parse(line)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test("commands run against the app; item numbers out of range are errors")
    func running() throws {
        let app = try TodoApp()
        #expect(app.run(.add("one")) == .output([]))
        #expect(app.run(.add("two")) == .output([]))
        #expect(app.run(.toggle(2)) == .output([]))
        #expect(app.run(.list) == .output(["1. [ ] one", "2. [x] two"]))
        #expect(app.run(.delete(5)) == .failure("no item 5; the list has 2 items"))
        #expect(app.run(.next) == .failure("next: already at the newest change (history 3/3)"))
        #expect(app.run(.quit) == .quit)
    }
}

@Suite("Todo storage")
struct StorageTests {
    @Test("the default file follows XDG_DATA_HOME, then HOME")
    func defaultLocation() {
        #expect(
            TodoStorage.defaultURL(environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/me"]).path
                == "/data/dispatch-todo/todos.json"
        )
        #expect(
            TodoStorage.defaultURL(environment: ["HOME": "/home/me"]).path
                == "/home/me/.local/share/dispatch-todo/todos.json"
        )
    }

    @Test("a missing file is an empty list; saving creates it atomically and loads back")
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = TodoStorage(url: directory.file("nested/todos.json"))
        #expect(try storage.load() == [])
        let items = [TodoItem(id: 1, title: "ä ✓ \"quoted\""), TodoItem(id: 4, title: "b", isDone: true)]
        try storage.save(items)
        #expect(try storage.load() == items)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.file("nested").path)
        #expect(leftovers == ["todos.json"])
    }

    @Test(
        "a corrupt or unreadable file is an error naming it",
        arguments: ["{\"version\":1,\"items\":[{", "[]", "", "dir"]
    )
    func corrupt(contents: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let url = directory.file("todos.json")
        if contents == "dir" {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } else {
            try contents.write(to: url, atomically: true, encoding: .utf8)
        }
        let failure = #expect(throws: TodoStorage.Failure.self) { try TodoStorage(url: url).load() }
        #expect(failure?.path == url.path)
    }

    @Test("the persistence observer saves after each change, restores included, and not when nothing changed")
    func persistence() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let storage = TodoStorage(url: directory.file("todos.json"))
        let app = try TodoApp(storage: storage)
        app.perform(.moveCursor(by: 1))
        #expect(!FileManager.default.fileExists(atPath: storage.url.path))
        app.perform(.add(title: "x"))
        #expect(try storage.load().map(\.title) == ["x"])
        app.previous()
        #expect(try storage.load() == [])
        app.next()
        #expect(try storage.load().map(\.title) == ["x"])
    }

    @Test(
        "a failed save is reported with the file and the reason; the next change retries; an undo to the saved list clears it"
    )
    func saveFailure() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A file where the directory should be makes every save fail.
        let blocker = directory.file("blocker")
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        let reports = Shared<[TodoStorage.Failure?]>([])
        let storage = TodoStorage(url: blocker.appendingPathComponent("todos.json"))
        let app = try TodoApp(storage: storage) { failure in reports.append(failure) }
        app.perform(.add(title: "x"))
        let expected = TodoStorage.Failure(
            .save,
            path: storage.url.path,
            reason: "\(blocker.path) is a file, not a directory"
        )
        #expect(reports.current == [expected])
        #expect(app.saveFailure == expected)
        #expect(app.list.state.items.map(\.title) == ["x"])
        #expect(app.saveNow() == expected)
        #expect(reports.current.count == 1, "saveNow returns its result instead of reporting it")

        try FileManager.default.removeItem(at: blocker)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: false)
        app.perform(.add(title: "y"))
        #expect(reports.current == [expected, nil])
        #expect(app.saveFailure == nil)
        #expect(try storage.load().map(\.title) == ["x", "y"])

        // Broken again; going back to the list the file holds needs no save.
        try FileManager.default.removeItem(at: blocker)
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        app.perform(.add(title: "z"))
        #expect(app.saveFailure == expected)
        app.previous()
        #expect(app.saveFailure == nil)
        #expect(reports.current == [expected, nil, expected, nil])
    }

    @Test("the save retried on quit: saveNow writes what a failed save could not")
    func saveNow() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let blocker = directory.file("blocker")
        try "not a directory".write(to: blocker, atomically: true, encoding: .utf8)
        let storage = TodoStorage(url: blocker.appendingPathComponent("todos.json"))
        let app = try TodoApp(storage: storage)
        app.perform(.add(title: "x"))
        #expect(app.saveFailure != nil)
        try FileManager.default.removeItem(at: blocker)
        #expect(app.saveNow() == nil)
        #expect(try storage.load().map(\.title) == ["x"])
    }

    @Test("saving follows a symbolic link, keeps the file's permissions, and refuses a directory in the way")
    func saveDetails() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let real = directory.file("real.json")
        let link = directory.file("link.json")
        try TodoStorage(url: real).save([TodoItem(id: 1, title: "a")])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: real.path)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        try TodoStorage(url: link).save([TodoItem(id: 1, title: "b")])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == real.path)
        #expect(try TodoStorage(url: real).load().map(\.title) == ["b"])
        let permissions = try FileManager.default.attributesOfItem(atPath: real.path)[.posixPermissions] as? Int
        #expect(permissions == 0o600)

        let folder = directory.file("folder")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        let failure = #expect(throws: TodoStorage.Failure.self) { try TodoStorage(url: folder).save([]) }
        #expect(failure?.description == "cannot save \(folder.path): it is a directory")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == [
                "folder", "link.json", "real.json",
            ]
        )
    }
}
