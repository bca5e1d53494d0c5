// `swift run todo`: a terminal todo list built on DispatchStore, with undo and redo (p and n).

import Foundation
import TodoCore

let usage = """
    usage: todo [--file PATH]
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
      q          quit (Ctrl-C and SIGTERM restore the terminal too)

    When standard input is not a terminal it reads one command per line:
    \(Command.usage.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
    and unknown commands get an error line on standard error; it goes on.

    options:
      --file PATH   the JSON file holding the list (default: $XDG_DATA_HOME/dispatch-todo/todos.json,
                    or ~/.local/share/dispatch-todo/todos.json); written atomically after each change.
                    A missing file starts an empty list; an unreadable or corrupt one is reported and
                    left untouched.
      -h, --help    show this help

    environment:
      NO_COLOR      when set, the interface uses no colours or text styles
    """

var fileArgument: String?
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "-h", "--help":
        print(usage)
        exit(0)
    case "--file":
        guard let path = arguments.popFirst() else {
            standardError("todo: --file needs a path\n\n\(usage)")
            exit(64)
        }
        fileArgument = path
    case _ where argument.hasPrefix("--file="):
        fileArgument = String(argument.dropFirst("--file=".count))
    default:
        standardError("todo: unknown argument '\(argument)'\n\n\(usage)")
        exit(64)
    }
}

let storage = TodoStorage(url: fileArgument.map { URL(fileURLWithPath: $0) } ?? TodoStorage.defaultURL())
let items: [TodoItem]
do {
    items = try storage.load()
} catch {
    standardError("todo: cannot use the todo file \(error)")
    standardError("todo: the file was left as it is; fix or move it, or pass another --file")
    exit(1)
}

let interactive = Terminal.isInteractive
let app = try TodoApp(items: items, storage: storage) { failure in
    if interactive {
        app.perform(.showMessage("Could not save: \(failure)"))
    } else {
        standardError("todo: could not save \(failure)")
    }
}

if interactive {
    let environment = ProcessInfo.processInfo.environment
    let styled = (environment["NO_COLOR"] ?? "").isEmpty && environment["TERM"] != "dumb"
    do {
        try TerminalInterface(app: app, styled: styled).run()
    } catch {
        standardError("todo: \(error)")
        exit(1)
    }
} else {
    LineInterface(app: app).run()
}
