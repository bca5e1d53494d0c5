import DispatchStore
import Foundation
import TodoCore

/// Draws the whole interface as one frame: a title, the items, the status line and the bottom line.
///
/// Everything is measured in terminal columns (``Swift/Character/displayWidth``), not characters:
/// wide characters take two columns, combining marks none. Lines wider than the terminal are cut
/// with `…`.
struct Screen {
    /// Whether to use colours and other text styles (off when `NO_COLOR` is set).
    let styled: Bool

    private enum Style {
        case plain
        case bold
        case dim
        case selected
        case message
        case error
    }

    /// The frame for the app's current state.
    ///
    /// - Parameters:
    ///   - app: The app, read for the list, the interface state, the history and the save status.
    ///   - prompt: The text being typed at the prompt, if a prompt is open; its scroll position is
    ///     updated to keep the cursor in sight.
    ///   - rows: The terminal's height.
    ///   - columns: The terminal's width.
    /// - Returns: The escape sequences and text that draw the frame, ending with the cursor placed
    ///   in the prompt (or hidden when there is none).
    func frame(for app: TodoApp, prompt: inout LineEditor?, rows: Int, columns: Int) -> String {
        let items = app.list.state.items
        let interface = app.interface.state
        let saveFailure = app.saveFailure
        var lines: [(String, Style)] = []
        let done = items.filter(\.isDone).count
        lines.append((" Todo  \(items.count) item\(items.count == 1 ? "" : "s"), \(done) done", .bold))
        lines.append(("", .plain))

        // Title, blank line, status line, bottom line; a save failure takes one more.
        let messageAboveStatus = saveFailure != nil && !interface.message.isEmpty
        let listRows = max(1, rows - 4 - (messageAboveStatus ? 1 : 0))
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
        let statusRows = messageAboveStatus ? 3 : 2
        while lines.count < rows - statusRows {
            lines.append(("", .plain))
        }
        if let saveFailure {
            if messageAboveStatus { lines.append(("  \(interface.message)", .message)) }
            // The retry happens on the next change and on quit; the help says so.
            let failure = "Not saved, will retry: \(saveFailure.path): \(saveFailure.reason)"
            lines.append((" \(app.historyLabel)  \(failure)", .error))
        } else {
            let message = interface.message.isEmpty ? "" : "  \(interface.message)"
            lines.append((" \(app.historyLabel)\(message)", .message))
        }
        var cursorColumn: Int?
        if var editor = prompt {
            let label: String
            if case .editing = interface.mode { label = " New title: " } else { label = " Title: " }
            let view = editor.view(fitting: columns - label.displayWidth)
            prompt = editor
            lines.append((label + view.text, .plain))
            cursorColumn = min(columns, label.displayWidth + view.cursorColumn + 1)
        } else {
            lines.append((" a add  e edit  space toggle  d delete  c clear  p/n history  ? help  q quit", .dim))
        }

        var frame = "\u{1B}[H"
        let shown = lines.prefix(rows)
        for (index, (text, style)) in shown.enumerated() {
            if index > 0 { frame += "\r\n" }
            let cut = text.truncated(toDisplayWidth: columns)
            let width = cut.displayWidth
            frame += apply(style, to: cut, padding: columns - width)
            // Erasing after a full line would erase its last character on terminals that keep
            // the cursor on the last column.
            if width < columns && !(styled && style == .selected) { frame += "\u{1B}[K" }
        }
        frame += "\u{1B}[J"
        if let cursorColumn {
            frame += "\u{1B}[\(shown.count);\(cursorColumn)H\u{1B}[?25h"
        } else {
            frame += "\u{1B}[?25l"
        }
        return frame
    }

    private func apply(_ style: Style, to text: String, padding: Int) -> String {
        guard styled else { return text }
        switch style {
        case .plain: return text
        case .bold: return "\u{1B}[1m\(text)\u{1B}[0m"
        case .dim: return "\u{1B}[2m\(text)\u{1B}[0m"
        case .selected: return "\u{1B}[7m\(text)\(String(repeating: " ", count: max(0, padding)))\u{1B}[0m"
        case .message: return "\u{1B}[36m\(text)\u{1B}[0m"
        case .error: return "\u{1B}[1;31m\(text)\u{1B}[0m"
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
        "  Ctrl-Z     suspend; fg in the shell brings it back",
        "  q          quit (Ctrl-C too)",
        "  At a prompt: ← → Home End move; Backspace, Delete, Ctrl-U (to the start) and",
        "  Ctrl-W (a word) erase. Pasted lines are text: several add several items.",
        "",
        "  Press any key to go back to the list.",
    ]
}
