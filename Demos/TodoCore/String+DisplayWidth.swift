extension Character {
    /// The number of terminal columns the character takes.
    ///
    /// A small `wcwidth` summed over the character's code points, as `wcswidth` and terminals such
    /// as tmux, xterm, VTE and Alacritty count them: East Asian wide and fullwidth characters (CJK
    /// ideographs, kana, Hangul syllables, fullwidth forms) and emoji shown as pictures take two
    /// columns each; combining marks, zero-width and format characters (U+200B, U+FE0F) and
    /// control characters none; everything else one. So `e` + U+0301 takes one column, `日本語`
    /// six, `👍🏽` four (the hand and the skin tone; terminals that join them into one picture,
    /// such as kitty or WezTerm, draw it in two, which leaves a line shorter, never longer), a
    /// flag two. A code point after U+200D (zero width joiner) joins the picture before it and
    /// adds nothing, as in tmux.
    public var displayWidth: Int {
        var width = 0
        var joining = false
        for scalar in unicodeScalars {
            if scalar.value == 0x200D {
                joining = true
                continue
            }
            if joining {
                joining = false
                continue
            }
            width += Character.width(of: scalar)
        }
        return width
    }

    /// The columns one code point takes: 0, 1 or 2.
    private static func width(of scalar: Unicode.Scalar) -> Int {
        let properties = scalar.properties
        switch properties.generalCategory {
        case .control, .format, .nonspacingMark, .enclosingMark, .lineSeparator, .paragraphSeparator:
            return 0
        default:
            break
        }
        // Hangul Jamo vowels and final consonants join the syllable before them.
        if (0x1160...0x11FF).contains(scalar.value) { return 0 }
        if isWide(scalar.value) { return 2 }
        // Emoji shown as pictures are East Asian Wide, except the regional indicators that make
        // up flags, which take one column each.
        if properties.isEmojiPresentation && !(0x1F1E6...0x1F1FF).contains(scalar.value) { return 2 }
        return 1
    }

    /// Whether the code point is East Asian Wide or Fullwidth (Unicode 15, the ranges `wcwidth`
    /// implementations use, emoji aside).
    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F,  // Hangul Jamo initial consonants
            0x2329...0x232A,  // angle brackets
            0x2E80...0x303E,  // CJK radicals, Kangxi, ideographic description, CJK symbols and punctuation
            0x3041...0x33FF,  // kana, Bopomofo, Hangul compatibility Jamo, Kanbun, CJK strokes, enclosed
            0x3400...0x4DBF,  // CJK extension A
            0x4E00...0x9FFF,  // CJK unified ideographs
            0xA000...0xA4CF,  // Yi
            0xA960...0xA97F,  // Hangul Jamo extended A
            0xAC00...0xD7A3,  // Hangul syllables
            0xF900...0xFAFF,  // CJK compatibility ideographs
            0xFE10...0xFE19,  // vertical forms
            0xFE30...0xFE6F,  // CJK compatibility forms, small form variants
            0xFF00...0xFF60,  // fullwidth forms
            0xFFE0...0xFFE6,  // fullwidth signs
            0x16FE0...0x16FE4,  // ideographic symbols
            0x17000...0x18CFF,  // Tangut, Khitan
            0x1B000...0x1B2FF,  // kana supplement and extensions, Nüshu
            0x1F200...0x1F2FF,  // enclosed ideographic supplement
            0x20000...0x2FFFD,  // CJK extensions B to F, compatibility supplement
            0x30000...0x3FFFD:  // CJK extensions G and H
            true
        default:
            false
        }
    }
}

extension StringProtocol {
    /// The number of terminal columns the text takes, character by character; see
    /// `Character.displayWidth`.
    public var displayWidth: Int {
        reduce(0) { $0 + $1.displayWidth }
    }
}

extension String {
    /// The text cut to at most `width` terminal columns, ending with `…` when something was cut.
    ///
    /// A wide character that would straddle the limit is left out whole, so the result may be one
    /// column narrower than `width`.
    ///
    /// - Parameter width: The most columns the result may take.
    /// - Returns: The text itself when it fits; otherwise its longest start that fits in
    ///   `width - 1` columns, followed by `…`.
    public func truncated(toDisplayWidth width: Int) -> String {
        guard width > 0 else { return "" }
        guard displayWidth > width else { return self }
        var result = ""
        var used = 0
        for character in self {
            let characterWidth = character.displayWidth
            if used + characterWidth > width - 1 { break }
            result.append(character)
            used += characterWidth
        }
        return result + "…"
    }
}
