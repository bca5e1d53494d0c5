import Testing
import TodoCore

@Suite("Display width")
struct DisplayWidthTests {
    @Test(
        "characters take the columns a terminal gives them",
        arguments: [
            ("abc", 3), ("日本語", 6), ("e\u{301}", 1), ("été", 3), ("한국어", 6), ("ｱ", 1), ("ＡＢ", 4),
            ("👍", 2), ("👍🏽", 4), ("🇯🇵", 2), ("👨\u{200D}👩\u{200D}👧", 2), ("❤\u{FE0F}", 1), ("\u{200B}", 0),
            ("\u{7}", 0), ("…", 1),
        ]
    )
    func width(text: String, columns: Int) {
        #expect(text.displayWidth == columns)
    }

    @Test(
        "text is cut to a number of columns with …, never inside a wide character",
        arguments: [
            ("abcdef", 4, "abc…"), ("abcd", 4, "abcd"), ("日本語", 5, "日本…"), ("日本語", 4, "日…"),
            ("日本語", 6, "日本語"), ("e\u{301}e\u{301}e\u{301}", 2, "e\u{301}…"), ("abc", 0, ""),
        ]
    )
    func truncation(text: String, width: Int, expected: String) {
        let cut = text.truncated(toDisplayWidth: width)
        #expect(cut == expected)
        #expect(cut.displayWidth <= width)
    }
}

@Suite("Prompt editing")
struct LineEditorTests {
    @Test("the cursor moves by characters; Backspace, Delete, Ctrl-U and Ctrl-W erase as in a shell")
    func editing() {
        var editor = LineEditor("buy milk now")
        #expect(editor.cursor == 12)
        let erased1 = editor.deleteWordBackward()
        #expect(erased1)
        #expect(editor.text == "buy milk ")
        let erased2 = editor.deleteWordBackward()
        #expect(erased2)
        #expect(editor.text == "buy ")
        editor.insert("日本e")
        editor.insert("\u{301}")
        #expect(editor.text == "buy 日本é")
        #expect(editor.cursor == 7)
        editor.moveLeft()
        editor.moveLeft()
        let erased3 = editor.deleteBackward()
        #expect(erased3)
        #expect(editor.text == "buy 本é")
        editor.moveToStart()
        let erased4 = editor.deleteBackward()
        #expect(!erased4)
        let erased5 = editor.deleteToStart()
        #expect(!erased5)
        let erased6 = editor.deleteForward()
        #expect(erased6)
        #expect(editor.text == "uy 本é")
        editor.moveRight()
        let erased7 = editor.deleteToStart()
        #expect(erased7)
        #expect(editor.text == "y 本é")
        editor.moveToEnd()
        let erased8 = editor.deleteForward()
        #expect(!erased8)
        #expect(editor.cursor == 4)
    }

    @Test("a text wider than the prompt scrolls to keep the cursor in sight, with … where text is hidden")
    func scrolling() {
        var editor = LineEditor("abcdefghijklmnopqrstuvwxyz")
        let view9 = editor.view(fitting: 30)
        #expect(view9 == .init(text: "abcdefghijklmnopqrstuvwxyz", cursorColumn: 26))
        let view10 = editor.view(fitting: 10)
        #expect(view10 == .init(text: "…stuvwxyz", cursorColumn: 9))
        editor.moveToStart()
        let view11 = editor.view(fitting: 10)
        #expect(view11 == .init(text: "abcdefghi…", cursorColumn: 0))
        for _ in 0..<8 { editor.moveRight() }
        // Still inside the visible part: no scrolling.
        let view12 = editor.view(fitting: 10)
        #expect(view12 == .init(text: "abcdefghi…", cursorColumn: 8))
        editor.moveRight()
        let view13 = editor.view(fitting: 10)
        #expect(view13 == .init(text: "…cdefghij…", cursorColumn: 8))
        var wide = LineEditor("日本語のとても長いタイトルです")
        let view14 = wide.view(fitting: 22)
        #expect(view14 == .init(text: "…ても長いタイトルです", cursorColumn: 21))
        wide.moveToStart()
        let view15 = wide.view(fitting: 22)
        #expect(view15 == .init(text: "日本語のとても長いタ…", cursorColumn: 0))
    }
}
