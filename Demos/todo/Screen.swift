import DispatchStore
import Foundation
import TodoCore

/// Draws the whole interface as one frame: a title, the items, the status line and the bottom line.
struct Screen {
    /// Whether to use colours and other text styles (off when `NO_COLOR` is set).
    let styled: Bool

    private enum Style {
        case plain
        case bold
        case dim
        case selected
        case message
    }

    /// The frame for the app's current state; `prompt` is the text typed after `Title: ` if any.
    func frame(for app: TodoApp, prompt: String?, rows: Int, columns: Int) -> String {
        let items = app.list.state.items
        let interface = app.interface.state
        var lines: [(String, Style)] = []
        let done = items.filter(\.isDone).count
        lines.append((" Todo  \(items.count) item\(items.count == 1 ? "" : "s"), \(done) done", .bold))
        lines.append(("", .plain))

        let listRows = max(1, rows - 4)
        if interface.mode == .help {
            lines += Screen.help.prefix(listRows).map { ($0, .plain) }
        } else if items.isEmpty {
            lines.append(("  Nothing to do. Press a to add an item.", .dim))
        } else {
            let top = interface.cursor >= listRows ? interface.cursor - listRows + 1 : 0
            for index in top..<min(items.count, top + listRows) {
                let item = items[index]
                let selected = index == interface.cursor
                let text = "\(selected ? ">" : " ") [\(item.isDone ? "x" : " ")] \(item.title)"
                lines.append((text, selected ? .selected : item.isDone ? .dim : .plain))
            }
        }
        while lines.count < rows - 2 {
            lines.append(("", .plain))
        }
        let message = interface.message.isEmpty ? "" : "  \(interface.message)"
        lines.append((" \(app.historyLabel)\(message)", .message))
        var cursorColumn: Int?
        if let prompt {
            let label = interface.mode == .adding ? " Title: " : " New title: "
            lines.append((label + prompt, .plain))
            cursorColumn = min(columns, label.count + prompt.count + 1)
        } else {
            lines.append((" a add  e edit  space toggle  d delete  c clear  p/n history  ? help  q quit", .dim))
        }

        var frame = "\u{1B}[H"
        for (index, (text, style)) in lines.prefix(rows).enumerated() {
            if index > 0 { frame += "\r\n" }
            frame += apply(style, to: String(text.prefix(columns)), width: columns)
            frame += "\u{1B}[K"
        }
        frame += "\u{1B}[J"
        if let cursorColumn {
            frame += "\u{1B}[\(min(rows, lines.count));\(cursorColumn)H\u{1B}[?25h"
        } else {
            frame += "\u{1B}[?25l"
        }
        return frame
    }

    private func apply(_ style: Style, to text: String, width: Int) -> String {
        guard styled else { return text }
        switch style {
        case .plain: return text
        case .bold: return "\u{1B}[1m\(text)\u{1B}[0m"
        case .dim: return "\u{1B}[2m\(text)\u{1B}[0m"
        case .selected: return "\u{1B}[7m\(text.padding(toLength: width, withPad: " ", startingAt: 0))\u{1B}[0m"
        case .message: return "\u{1B}[36m\(text)\u{1B}[0m"
        }
    }

    /// The help shown by `?`.
    static let help = [
        "  a          add an item (type the title, Enter to confirm, Esc to cancel)",
        "  e          edit the selected item's title",
        "  j k ↓ ↑    move the selection",
        "  space x    mark the selected item done or not done",
        "  d          delete the selected item",
        "  c          delete the done items",
        "  p          go back to the state before the last change",
        "  n          go forward to the next change",
        "  ?          show or hide this help",
        "  q          quit (Ctrl-C too)",
        "",
        "  Press any key to go back to the list.",
    ]
}
