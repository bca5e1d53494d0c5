import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A key press, decoded from the bytes a terminal sends in raw mode.
enum Key: Equatable {
    /// A printable character.
    case character(Character)
    /// A control key: Ctrl-A is `control("a")`.
    case control(Character)
    /// Text pasted while bracketed paste is on, as one piece: never read as keys.
    case paste(String)
    /// Up arrow.
    case up
    /// Down arrow.
    case down
    /// Left arrow.
    case left
    /// Right arrow.
    case right
    /// Home.
    case home
    /// End.
    case end
    /// Delete (the key that deletes forward).
    case delete
    /// Enter.
    case enter
    /// A lone Esc.
    case escape
    /// Backspace.
    case backspace
    /// Tab.
    case tab
    /// Ctrl-C.
    case interrupt
    /// Ctrl-Z.
    case suspend
    /// Ctrl-D, or the terminal was closed.
    case endOfInput
    /// A sequence this program does not use, with its bytes for the message.
    case unknown(String)
}

/// The terminal on standard input and output: raw mode, the alternate screen, bracketed paste,
/// its size and keys.
final class Terminal: @unchecked Sendable {
    // @unchecked: `original` and `isRaw` are only touched while holding `lock`; the input file
    // descriptor is read from one thread only.
    private let lock = NSLock()
    private var original = termios()
    /// The raw-mode settings applied by `enterFullScreen()`, applied again by `reclaim()`.
    private var raw = termios()
    private var isRaw = false

    /// What switches the screen on: the alternate screen, bracketed paste, cursor hidden.
    static let enterSequence = "\u{1B}[?1049h\u{1B}[?2004h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
    /// What switches it off again: styles reset, bracketed paste off, cursor shown, the main screen.
    static let leaveSequence = "\u{1B}[0m\u{1B}[?2004l\u{1B}[?25h\u{1B}[?1049l"

    /// Whether standard input and standard output are both terminals.
    static var isInteractive: Bool {
        isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
    }

    /// Switches to raw mode, the alternate screen and bracketed paste, with the cursor hidden.
    ///
    /// The settings found now are the ones ``restore()`` puts back; after a suspension they are
    /// read again, since the shell may have changed them meanwhile.
    ///
    /// - Throws: ``TerminalError`` when the terminal's settings cannot be read or changed.
    func enterFullScreen() throws {
        try lock.withLock {
            guard !isRaw else { return }
            guard tcgetattr(STDIN_FILENO, &original) == 0 else {
                throw TerminalError(message: "cannot read the terminal settings: \(String(cString: strerror(errno)))")
            }
            raw = original
            cfmakeraw(&raw)
            withUnsafeMutableBytes(of: &raw.c_cc) { characters in
                characters[Int(VMIN)] = 1
                characters[Int(VTIME)] = 0
            }
            guard tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0 else {
                throw TerminalError(
                    message: "cannot switch the terminal to raw mode: \(String(cString: strerror(errno)))"
                )
            }
            isRaw = true
            writeAll(Terminal.enterSequence)
        }
    }

    /// Leaves the alternate screen and restores the settings found by `enterFullScreen()`.
    ///
    /// Safe to call several times and from a signal-handling queue.
    func restore() {
        lock.withLock {
            guard isRaw else { return }
            writeAll(Terminal.leaveSequence)
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
            isRaw = false
        }
    }

    /// Applies raw mode again and clears the screen, when the process was continued after a stop
    /// it could not prepare for (SIGSTOP): the shell may have changed both meanwhile.
    ///
    /// Does nothing while the terminal is restored.
    func reclaim() {
        lock.withLock {
            guard isRaw else { return }
            _ = tcsetattr(STDIN_FILENO, TCSANOW, &raw)
            writeAll(Terminal.enterSequence)
        }
    }

    /// Writes a whole frame at once, unless the terminal was restored meanwhile.
    ///
    /// - Parameter frame: The frame's text and escape sequences.
    func draw(_ frame: String) {
        lock.withLock {
            guard isRaw else { return }
            writeAll(frame)
        }
    }

    /// The window size, or 24 x 80 when it cannot be read.
    var size: (rows: Int, columns: Int) {
        var window = winsize()
        let status = withUnsafeMutablePointer(to: &window) { ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), $0) }
        guard status == 0, window.ws_row > 0, window.ws_col > 0 else { return (24, 80) }
        return (Int(window.ws_row), Int(window.ws_col))
    }

    /// Reads one key press, or one whole paste, waiting for it.
    ///
    /// - Returns: The key.
    func readKey() -> Key {
        guard let byte = readByte() else { return .endOfInput }
        switch byte {
        case 3: return .interrupt
        case 4: return .endOfInput
        case 8, 127: return .backspace
        case 9: return .tab
        case 10, 13: return .enter
        case 26: return .suspend
        case 27: return readEscapeSequence()
        case 1...31: return .control(Character(Unicode.Scalar(byte + 96)))
        case 0: return .unknown("Ctrl-Space")
        default: return readCharacter(startingWith: byte)
        }
    }

    private func readEscapeSequence() -> Key {
        // A lone Esc sends nothing after it; an arrow key sends "[A" or "OA" right away.
        guard inputIsPending(milliseconds: 50), let introducer = readByte() else { return .escape }
        guard introducer == UInt8(ascii: "[") || introducer == UInt8(ascii: "O") else {
            return .unknown("Alt-\(String(decoding: [introducer], as: UTF8.self))")
        }
        var parameters: [UInt8] = []
        var final = readByte()
        while let byte = final, !(0x40...0x7E).contains(byte) {
            parameters.append(byte)
            final = readByte()
        }
        let arguments = String(decoding: parameters, as: UTF8.self)
        switch (final.map { Character(Unicode.Scalar($0)) }, arguments) {
        case ("A", _): return .up
        case ("B", _): return .down
        case ("C", _): return .right
        case ("D", _): return .left
        case ("H", _), ("~", "1"), ("~", "7"): return .home
        case ("F", _), ("~", "4"), ("~", "8"): return .end
        case ("~", "3"): return .delete
        case ("~", "200"): return .paste(readPaste())
        default:
            let sequence = String(decoding: [introducer] + parameters + (final.map { [$0] } ?? []), as: UTF8.self)
            return .unknown("Esc \(sequence)")
        }
    }

    /// Reads pasted bytes up to the end marker, `ESC [ 201 ~`.
    private func readPaste() -> String {
        let end: [UInt8] = Array("\u{1B}[201~".utf8)
        var bytes: [UInt8] = []
        while let byte = readByte() {
            bytes.append(byte)
            if bytes.count >= end.count, bytes.suffix(end.count).elementsEqual(end) {
                bytes.removeLast(end.count)
                break
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private func readCharacter(startingWith first: UInt8) -> Key {
        var bytes = [first]
        let length =
            switch first {
            case 0xC0..<0xE0: 2
            case 0xE0..<0xF0: 3
            case 0xF0..<0xF8: 4
            default: 1
            }
        while bytes.count < length, let next = readByte() {
            bytes.append(next)
        }
        guard let character = String(validating: bytes, as: UTF8.self)?.first else {
            return .unknown("bytes that are not UTF-8")
        }
        return .character(character)
    }

    private func inputIsPending(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            return ready > 0
        }
    }

    private func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let count = read(STDIN_FILENO, &byte, 1)
            if count == 1 { return byte }
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            return nil
        }
    }

    private func writeAll(_ string: String) {
        var bytes = Array(string.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}

/// Why the terminal could not be set up.
struct TerminalError: Error, CustomStringConvertible {
    /// The sentence to show.
    let message: String

    /// The sentence to show.
    var description: String {
        message
    }
}
