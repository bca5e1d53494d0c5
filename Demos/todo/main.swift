// `swift run todo`: a terminal todo list built on DispatchStore, with undo and redo (p and n).

import DispatchStore
import DispatchStoreInspector
import Foundation
import TodoCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    usage: todo [--file PATH] [--report PAGE.html]
           todo --help

    A todo list that keeps every change: step back with p and forward with n.

    In a terminal it is a full-screen interface:
      a          add an item: type the title after "Title:", Enter confirms, Esc cancels
      e          edit the selected item's title
      j k ↓ ↑    move the selection
      space x    mark the selected item done or not done
      d          delete the selected item
      c          delete the done items
      p          previous state (undo); the status line shows "history N/M"
      n          next state (redo)
      ?          help
      Ctrl-Z     suspend; fg in the shell brings it back
      q          quit (Ctrl-C and SIGTERM restore the terminal too)
    At a prompt, ← → Home End (Ctrl-A, Ctrl-E) move the cursor, Backspace and Delete erase,
    Ctrl-U erases to the start and Ctrl-W the word before the cursor; long text scrolls sideways.
    Pasted text is only ever text: at the "Title:" prompt, several pasted lines add several items.
    Keys that do nothing say so in the status line.

    When standard input or output is not a terminal it reads one command per line
    (with a notice on standard error when only standard output is redirected):
    \(Command.usage.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
    and unknown commands get an error line on standard error; it goes on.

    options:
      --file PATH   the JSON file holding the list (default: $XDG_DATA_HOME/dispatch-todo/todos.json,
                    or ~/.local/share/dispatch-todo/todos.json); written atomically after each change.
                    A missing file starts an empty list; an unreadable or corrupt one (a directory, a
                    device, an empty file, one over 16 MiB) is reported and left untouched. When a
                    save fails, or the path cannot be saved to (a file where a directory should be),
                    the status line (or standard error) says why, the list stays in memory, and the
                    next change and quitting try again.
      --report PATH write the session's page to PATH when the program quits: one HTML file to open in
                    a browser, with every action, the stores' states after it and what changed, and
                    the recorder's history (the moves back and forth, what was undone at the end)
      -h, --help    show this help

    environment:
      NO_COLOR      when set, the interface uses no colours or text styles

    exit status: 0 when all went well; 1 when the file could not be read, or a change could not be
    saved; 64 for a bad argument.
    """

/// Reports a bad command line in two lines, the second pointing at `--help`, and exits with 64
/// (`EX_USAGE`).
func usageError(_ problem: String) -> Never {
    standardError("todo: \(problem)")
    standardError("usage: todo [--file PATH] [--report PAGE.html]; todo --help lists the keys and commands")
    exit(64)
}

var fileArgument: String?
var reportArgument: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "-h", "--help":
        print(usage)
        exit(0)
    case "--file":
        guard let path = arguments.popFirst(), !path.isEmpty else { usageError("--file needs a path") }
        fileArgument = path
    case _ where argument.hasPrefix("--file="):
        let path = String(argument.dropFirst("--file=".count))
        guard !path.isEmpty else { usageError("--file needs a path") }
        fileArgument = path
    case "--report":
        guard let path = arguments.popFirst(), !path.isEmpty else { usageError("--report needs a path") }
        reportArgument = path
    case _ where argument.hasPrefix("--report="):
        let path = String(argument.dropFirst("--report=".count))
        guard !path.isEmpty else { usageError("--report needs a path") }
        reportArgument = path
    case _ where argument.hasPrefix("-"):
        usageError("unknown option '\(argument)'")
    default:
        usageError("unexpected argument '\(argument)'; the list's file goes after --file")
    }
}

// A page that cannot be written is refused before the session starts, not lost at its end.
if let reportArgument {
    do {
        try Inspector.checkPagePath(reportArgument)
    } catch {
        standardError("todo: \(error)")
        exit(1)
    }
}

let storage = TodoStorage(url: fileArgument.map { URL(fileURLWithPath: $0) } ?? TodoStorage.defaultURL())
let items: [TodoItem]
do {
    items = try storage.load()
} catch {
    standardError("todo: \(error)")
    standardError("todo: the file was left as it is; fix or move it, or pass another --file")
    exit(1)
}

let saveStatus = SaveStatusRelay()
let app: TodoApp
do {
    app = try TodoApp(items: items, storage: storage) { saveStatus.report($0) }
} catch {
    standardError("todo: cannot set up the list: \(sentence(for: error))")
    exit(70)
}

let report = reportArgument.map { path in
    let inspector = Inspector(title: "todo")
    app.dispatcher.register(middleware: inspector)
    inspector.follow(app.recorder)
    return (path: path, inspector: inspector)
}

/// Writes the session's page, if asked for, and exits with `status` (1 when the page failed).
func finish(_ status: Int32) -> Never {
    if let report {
        do {
            let written = try report.inspector.writePage(to: report.path)
            standardError("todo: \(written)")
        } catch {
            standardError("todo: \(error)")
            exit(1)
        }
    }
    exit(status)
}

// A path that cannot be saved yet (a file where a directory should be) starts an empty list, with a
// notice: the user may move the file away, and the next change saves.
let startProblem = items.isEmpty ? storage.saveProblem() : nil

if Terminal.isInteractive {
    let environment = ProcessInfo.processInfo.environment
    let styled = (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    let interface = TerminalInterface(app: app, styled: styled)
    saveStatus.handler = { _ in interface.redraw() }
    if let startProblem {
        let text = "\(startProblem); each change tries again"
        app.perform(.showMessage(text.prefix(1).uppercased() + text.dropFirst()))
    }
    let unsaved: TodoStorage.Failure?
    do {
        unsaved = try interface.run()
    } catch {
        standardError("todo: \(error)")
        exit(1)
    }
    if let unsaved {
        standardError("todo: \(unsaved); the changes since the last save are lost")
        finish(1)
    }
    finish(0)
} else {
    if isatty(STDIN_FILENO) == 1 {
        standardError("todo: standard output is not a terminal, so commands are read line by line (type help)")
    }
    let interface = LineInterface(app: app)
    saveStatus.handler = { interface.saveStatusChanged($0) }
    if let startProblem {
        standardError("todo: notice: \(startProblem); the list starts empty, and each change tries again")
    }
    finish(interface.run())
}

/// A library error as a sentence for a person: the message without its code name.
func sentence(for error: any Error) -> String {
    (error as? DispatchError)?.message ?? "\(error)"
}
