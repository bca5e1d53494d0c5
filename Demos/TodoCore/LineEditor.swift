/// The text typed at a prompt and the cursor in it, with the editing keys of a shell.
///
/// The text is a list of characters (grapheme clusters), so the cursor never lands inside an
/// accented letter or an emoji. ``view(fitting:)`` scrolls the text sideways to keep the cursor in
/// sight when the text is wider than the prompt.
public struct LineEditor: Equatable, Sendable {
    /// The characters typed.
    public private(set) var characters: [Character]
    /// Where the cursor is: the index of the character it stands on, `characters.count` at the end.
    public private(set) var cursor: Int
    /// The index of the first character shown, kept from one view to the next so that the text
    /// does not jump while the cursor moves inside the visible part.
    private var scroll = 0

    /// What the prompt shows: the visible part of the text and where the cursor is on it.
    public struct View: Equatable, Sendable {
        /// The visible text, with `…` at either end when text is hidden on that side.
        public var text: String
        /// The cursor's column in ``text``, counted in terminal columns from 0.
        public var cursorColumn: Int

        /// Creates a view.
        ///
        /// - Parameters:
        ///   - text: The visible text.
        ///   - cursorColumn: The cursor's column in it.
        public init(text: String, cursorColumn: Int) {
            self.text = text
            self.cursorColumn = cursorColumn
        }
    }

    /// Creates an editor holding `text`, with the cursor at its end.
    ///
    /// - Parameter text: The text to start with.
    public init(_ text: String = "") {
        characters = Array(text)
        cursor = characters.count
    }

    /// The text typed.
    public var text: String {
        String(characters)
    }

    /// Inserts `text` at the cursor and moves the cursor after it.
    ///
    /// - Parameter text: The text to insert.
    public mutating func insert(_ text: String) {
        // Re-segment around the insertion: a combining mark typed after a letter joins it.
        let before = String(characters[..<cursor]) + text
        let after = characters[cursor...]
        characters = Array(before + String(after))
        cursor = characters.count - after.count
    }

    /// Moves the cursor one character left (Left).
    public mutating func moveLeft() {
        cursor = max(0, cursor - 1)
    }

    /// Moves the cursor one character right (Right).
    public mutating func moveRight() {
        cursor = min(characters.count, cursor + 1)
    }

    /// Moves the cursor to the start (Home, Ctrl-A).
    public mutating func moveToStart() {
        cursor = 0
    }

    /// Moves the cursor to the end (End, Ctrl-E).
    public mutating func moveToEnd() {
        cursor = characters.count
    }

    /// Deletes the character before the cursor (Backspace).
    ///
    /// - Returns: `false` when the cursor is at the start, so nothing was deleted.
    @discardableResult
    public mutating func deleteBackward() -> Bool {
        guard cursor > 0 else { return false }
        characters.remove(at: cursor - 1)
        cursor -= 1
        return true
    }

    /// Deletes the character under the cursor (Delete).
    ///
    /// - Returns: `false` when the cursor is at the end, so nothing was deleted.
    @discardableResult
    public mutating func deleteForward() -> Bool {
        guard cursor < characters.count else { return false }
        characters.remove(at: cursor)
        return true
    }

    /// Deletes from the start to the cursor (Ctrl-U).
    ///
    /// - Returns: `false` when the cursor is at the start, so nothing was deleted.
    @discardableResult
    public mutating func deleteToStart() -> Bool {
        guard cursor > 0 else { return false }
        characters.removeSubrange(..<cursor)
        cursor = 0
        return true
    }

    /// Deletes the word before the cursor and the spaces after it (Ctrl-W), as a shell does:
    /// words are separated by spaces.
    ///
    /// - Returns: `false` when the cursor is at the start, so nothing was deleted.
    @discardableResult
    public mutating func deleteWordBackward() -> Bool {
        guard cursor > 0 else { return false }
        var start = cursor
        while start > 0, characters[start - 1].isWhitespace { start -= 1 }
        while start > 0, !characters[start - 1].isWhitespace { start -= 1 }
        characters.removeSubrange(start..<cursor)
        cursor = start
        return true
    }

    /// The part of the text to show in `width` columns, scrolled so that the cursor is visible.
    ///
    /// When the text and the cursor fit, all of it is shown. Otherwise the view keeps its previous
    /// scroll position while the cursor stays inside it, moves just enough to bring the cursor back
    /// when it leaves, and marks hidden text on either side with `…`.
    ///
    /// - Parameter width: The columns available, at least 3 for scrolling to work.
    /// - Returns: The visible text and the cursor's column in it.
    public mutating func view(fitting width: Int) -> View {
        let widths = characters.map(\.displayWidth)
        let total = widths.reduce(0, +)
        // The cursor needs a column of its own at the end of the text.
        if total + 1 <= width || width < 3 {
            scroll = 0
            let prefix = widths[..<cursor].reduce(0, +)
            return View(
                text: text.truncated(toDisplayWidth: max(width, 0)),
                cursorColumn: min(prefix, max(width - 1, 0))
            )
        }
        // The cell the cursor stands on: the character under it, or one free column at the end.
        func cursorCell(_ index: Int) -> Int {
            index < widths.count ? widths[index] : 1
        }
        // Whether the text from `start` on, cursor included, fits with the markers it needs.
        func fits(from start: Int) -> Bool {
            let left = start > 0 ? 1 : 0
            let right = cursor + 1 < widths.count ? 1 : 0
            return left + widths[start..<cursor].reduce(0, +) + cursorCell(cursor) + right <= width
        }
        scroll = min(scroll, cursor)
        while scroll < cursor, !fits(from: scroll) { scroll += 1 }
        // Show as much as possible: scroll back while the end of the text is in sight and the
        // start still fits.
        while scroll > 0 {
            let left = scroll - 1 > 0 ? 1 : 0
            let shown = left + widths[(scroll - 1)...].reduce(0, +) + (cursor == widths.count ? 1 : 0)
            guard shown <= width else { break }
            scroll -= 1
        }
        var text = scroll > 0 ? "…" : ""
        var used = scroll > 0 ? 1 : 0
        var cursorColumn = used
        var index = scroll
        while index < characters.count {
            let rest = widths[index...].reduce(0, +)
            let needsMarker = used + rest + (cursor == widths.count ? 1 : 0) > width
            if needsMarker && used + widths[index] + 1 > width { break }
            if index == cursor { cursorColumn = used }
            text.append(characters[index])
            used += widths[index]
            index += 1
        }
        if index == characters.count {
            if cursor == characters.count { cursorColumn = used }
        } else {
            text += "…"
        }
        return View(text: text, cursorColumn: cursorColumn)
    }
}
