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
    case character(Character)
    case up
    case down
    case left
    case right
    case enter
    case escape
    case backspace
    case interrupt
    case endOfInput
    case unknown
}

/// The terminal on standard input and output: raw mode, the alternate screen, its size and keys.
final class Terminal: @unchecked Sendable {
    // @unchecked: `original` and `isRaw` are only touched while holding `lock`; the input file
    // descriptor is read from one thread only.
    private let lock = NSLock()
    private var original = termios()
    private var isRaw = false

    /// Whether standard input and standard output are both terminals.
    static var isInteractive: Bool {
        isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1
    }

    /// Switches to raw mode and the alternate screen, with the cursor hidden.
    func enterFullScreen() throws {
        try lock.withLock {
            guard tcgetattr(STDIN_FILENO, &original) == 0 else {
                throw TerminalError(message: "cannot read the terminal settings: \(String(cString: strerror(errno)))")
            }
            var raw = original
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
            writeAll("\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J")
        }
    }

    /// Leaves the alternate screen and restores the settings found by `enterFullScreen()`.
    ///
    /// Safe to call several times and from a signal-handling queue.
    func restore() {
        lock.withLock {
            guard isRaw else { return }
            writeAll("\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l")
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &original)
            isRaw = false
        }
    }

    /// Writes a whole frame at once, unless the terminal was restored meanwhile.
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

    /// Reads one key press, waiting for it.
    func readKey() -> Key {
        guard let byte = readByte() else { return .endOfInput }
        switch byte {
        case 3: return .interrupt
        case 4: return .endOfInput
        case 8, 127: return .backspace
        case 10, 13: return .enter
        case 27: return readEscapeSequence()
        case 0..<32: return .unknown
        default: return readCharacter(startingWith: byte)
        }
    }

    private func readEscapeSequence() -> Key {
        // A lone Esc sends nothing after it; an arrow key sends "[A" or "OA" right away.
        guard inputIsPending(milliseconds: 40), let introducer = readByte() else { return .escape }
        guard introducer == UInt8(ascii: "[") || introducer == UInt8(ascii: "O") else { return .escape }
        var final = readByte()
        while let byte = final, !(0x40...0x7E).contains(byte) {
            final = readByte()
        }
        switch final {
        case UInt8(ascii: "A"): return .up
        case UInt8(ascii: "B"): return .down
        case UInt8(ascii: "C"): return .right
        case UInt8(ascii: "D"): return .left
        default: return .unknown
        }
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
        guard let character = String(validating: bytes, as: UTF8.self)?.first else { return .unknown }
        return .character(character)
    }

    private func inputIsPending(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0
    }

    private func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let count = read(STDIN_FILENO, &byte, 1)
            if count == 1 { return byte }
            if count < 0 && errno == EINTR { continue }
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
    let message: String

    var description: String {
        message
    }
}
