/// A command of the line interface, used when standard input is not a terminal.
///
/// One command per line: `add TITLE`, `edit N TITLE`, `toggle N`, `delete N`, `clear`, `prev`,
/// `next`, `list`, `help`, `quit`. Items are numbered from 1, as `list` prints them.
public enum Command: Equatable, Sendable {
    /// `add TITLE`
    case add(String)
    /// `edit N TITLE`
    case edit(Int, String)
    /// `toggle N`
    case toggle(Int)
    /// `delete N`
    case delete(Int)
    /// `clear`: removes done items.
    case clear
    /// `prev`: the list before the last change.
    case previous
    /// `next`: the next recorded change.
    case next
    /// `list`: prints `N. [ ] title` lines.
    case list
    /// `help`
    case help
    /// `quit`
    case quit

    /// A line that could not be understood, with the reason.
    public struct ParseError: Error, Equatable, CustomStringConvertible {
        /// The sentence to show.
        public let description: String
    }

    /// The help text of the line interface.
    public static let usage = """
        commands (one per line; N is an item number as printed by list):
          add TITLE        add an item
          edit N TITLE     rename item N
          toggle N         mark item N done or not done
          delete N         delete item N
          clear            delete the done items
          prev             go back to the list before the last change
          next             go forward to the next change
          list             print the items as "N. [ ] title"
          help             print this help
          quit             stop reading commands
        """

    /// Parses one line; blank lines and lines starting with `#` are not commands.
    ///
    /// - Parameter line: The line, without its newline.
    /// - Returns: The command, or `nil` for a blank or comment line.
    /// - Throws: ``ParseError`` naming what is wrong.
    public static func parse(_ line: String) throws(ParseError) -> Command? {
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { return nil }
        let name = String(trimmed.prefix { $0 != " " && $0 != "\t" })
        let rest = String(trimmed.dropFirst(name.count)).trimmingCharacters(in: .whitespaces)
        switch name.lowercased() {
        case "add":
            guard !rest.isEmpty else { throw ParseError(description: "add needs a title, as in: add buy milk") }
            return .add(rest)
        case "edit":
            let number = String(rest.prefix { $0 != " " && $0 != "\t" })
            let title = String(rest.dropFirst(number.count)).trimmingCharacters(in: .whitespaces)
            guard !number.isEmpty, !title.isEmpty else {
                throw ParseError(description: "edit needs an item number and a title, as in: edit 2 buy bread")
            }
            return .edit(try itemNumber(number, for: "edit"), title)
        case "toggle", "delete":
            guard !rest.isEmpty else {
                throw ParseError(description: "\(name) needs an item number, as in: \(name) 1")
            }
            let number = try itemNumber(rest, for: name)
            return name.lowercased() == "toggle" ? .toggle(number) : .delete(number)
        case "clear" where rest.isEmpty: return .clear
        case "prev" where rest.isEmpty, "previous" where rest.isEmpty: return .previous
        case "next" where rest.isEmpty: return .next
        case "list" where rest.isEmpty, "ls" where rest.isEmpty: return .list
        case "help" where rest.isEmpty, "?" where rest.isEmpty: return .help
        case "quit" where rest.isEmpty, "exit" where rest.isEmpty, "q" where rest.isEmpty: return .quit
        case "clear", "prev", "previous", "next", "list", "ls", "help", "?", "quit", "exit", "q":
            throw ParseError(description: "\(name) takes no argument")
        default:
            throw ParseError(
                description: "unknown command '\(name)' (try: add, edit, toggle, delete, clear, prev, next, list, quit)"
            )
        }
    }

    private static func itemNumber(_ text: String, for command: String) throws(ParseError) -> Int {
        guard let number = Int(text), number > 0 else {
            throw ParseError(description: "\(command): '\(text)' is not an item number (1, 2, ...)")
        }
        return number
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: CharacterSet) -> String {
        var characters = Substring(self)
        while let first = characters.first, set.contains(first) { characters.removeFirst() }
        while let last = characters.last, set.contains(last) { characters.removeLast() }
        return String(characters)
    }
}

/// The few character sets the parser needs (avoiding Foundation's CharacterSet for two characters).
private struct CharacterSet {
    static let whitespaces = CharacterSet()

    func contains(_ character: Character) -> Bool {
        character == " " || character == "\t"
    }
}
