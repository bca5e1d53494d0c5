import DispatchStore
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One frame the program drew: its lines without escape codes (trailing spaces removed) and where
/// it left the cursor.
struct Frame: Equatable, CustomStringConvertible {
    /// The screen's lines, top to bottom.
    var lines: [String]
    /// The cursor's row and column, from 1, or `nil` when the cursor is hidden.
    var cursor: Cursor?

    /// A position on the screen, counted from 1 as terminals do.
    struct Cursor: Equatable {
        /// The row.
        var row: Int
        /// The column.
        var column: Int
    }

    /// The lines, numbered, and the cursor, for failure messages.
    var description: String {
        let numbered = lines.enumerated().map { String(format: "%2d|", $0.offset + 1) + $0.element }
        let place = cursor.map { "cursor at row \($0.row), column \($0.column)" } ?? "cursor hidden"
        return (numbered + [place]).joined(separator: "\n")
    }
}

/// The `todo` program running on a pseudo-terminal, driven by key presses.
///
/// Every wait is for an exact state (a whole frame, a byte sequence, a process state), with a
/// generous deadline that only a failure reaches; there are no sleeps for ordering. Frames are
/// read only from the output written after the last key press or signal, so that a frame drawn
/// before the program saw the key is never taken for its answer.
final class TerminalSession: @unchecked Sendable {
    // @unchecked: `output` is a Shared value; `mark` and the descriptors are only used from the
    // test's task, one call at a time.
    private let process = Process()
    private let master: Int32
    /// The pseudo-terminal's device, opened again to read its settings.
    private let slaveName: String
    private let output = Shared<[UInt8]>([])
    /// Whether the program's output ended (it exited, and closed the terminal).
    private let ended = Shared(false)
    /// Signalled each time output arrives, and at its end.
    private let arrived = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)
    /// Signalled when the reader has read everything the program wrote (end of file on the master).
    private let drained = DispatchSemaphore(value: 0)
    private let standardOutputPipe: Pipe?
    /// Where in the output the last key press or signal was; frames before it are old.
    private var mark = 0

    /// How long a wait may take before the test fails: long, since the machine may be loaded.
    static let deadline: Double = 60

    /// The terminal size the tests use unless they say otherwise.
    static let rows: UInt16 = 10
    /// The terminal width the tests use unless they say otherwise.
    static let columns: UInt16 = 80

    /// Starts `todo` with `arguments` on a new pseudo-terminal of `rows` x `columns`.
    ///
    /// - Parameters:
    ///   - arguments: The program's arguments.
    ///   - environment: Variables added to the test's environment (`TERM` is `xterm`).
    ///   - rows: The terminal's height.
    ///   - columns: The terminal's width.
    ///   - standardOutputToPipe: Whether standard output goes to a pipe instead of the terminal.
    /// - Throws: ``TerminalTestError`` when no pseudo-terminal can be opened, or the error of
    ///   starting the program.
    init(
        _ arguments: [String],
        environment: [String: String] = [:],
        rows: UInt16 = TerminalSession.rows,
        columns: UInt16 = TerminalSession.columns,
        standardOutputToPipe: Bool = false
    ) throws {
        // Writing to a program that exited must fail with EPIPE, not kill the tests.
        signal(SIGPIPE, SIG_IGN)
        let descriptor = PseudoTerminal.openMaster()
        guard descriptor >= 0, PseudoTerminal.grant(descriptor) == 0, PseudoTerminal.unlock(descriptor) == 0,
            let name = PseudoTerminal.slaveName(descriptor)
        else {
            throw TerminalTestError(message: "cannot open a pseudo-terminal")
        }
        master = descriptor
        slaveName = name
        var window = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = withUnsafeMutablePointer(to: &window) { ioctl(descriptor, UInt(TIOCSWINSZ), $0) }
        let slave = open(name, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw TerminalTestError(message: "cannot open \(name)") }
        let handle = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        process.executableURL = Executables.directory.appendingPathComponent("todo")
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["TERM": "xterm"].merging(environment) { $1 })
        { $1 }
        process.standardInput = handle
        standardOutputPipe = standardOutputToPipe ? Pipe() : nil
        process.standardOutput = standardOutputPipe ?? handle
        process.standardError = handle
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        // The child has its own copies now; without closing this one, reading the master would
        // never reach the end when the child exits.
        try handle.close()
        let master = master
        let output = output
        let arrived = arrived
        let drained = drained
        let ended = ended
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(master, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                output.withLock { $0.append(contentsOf: buffer[0..<count]) }
                arrived.signal()
            }
            ended.withLock { $0 = true }
            drained.signal()
            arrived.signal()
        }
    }

    /// Starts `todo --file file`; see ``init(_:environment:rows:columns:standardOutputToPipe:)``.
    convenience init(
        file: String,
        environment: [String: String] = [:],
        rows: UInt16 = TerminalSession.rows,
        columns: UInt16 = TerminalSession.columns
    ) throws {
        try self.init(["--file", file], environment: environment, rows: rows, columns: columns)
    }

    /// The program's process identifier.
    var processIdentifier: Int32 {
        process.processIdentifier
    }

    /// Types `keys`: their UTF-8 bytes go to the terminal, as a keyboard sends them.
    ///
    /// - Parameter keys: The keys, with escape sequences for special keys (`"\u{1B}[A"` is Up).
    func press(_ keys: String) {
        setMark()
        let bytes = Array(keys.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }

    /// Pastes `text` as a terminal with bracketed paste on sends it: between `ESC [ 200 ~` and
    /// `ESC [ 201 ~`.
    ///
    /// - Parameter text: The pasted text.
    func paste(_ text: String) {
        press("\u{1B}[200~\(text)\u{1B}[201~")
    }

    /// Sends `number` to the program.
    ///
    /// - Parameter number: The signal.
    func send(signal number: Int32) {
        setMark()
        kill(process.processIdentifier, number)
    }

    /// Everything the program wrote to the terminal so far.
    var rawOutput: String {
        String(decoding: output.current, as: UTF8.self)
    }

    /// Everything the program wrote to standard output, when that is a pipe; waits for the end.
    func pipedOutput() -> String {
        guard let standardOutputPipe else { return "" }
        return String(decoding: standardOutputPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// Everything written since the last key press or signal.
    var outputSinceMark: String {
        let bytes = output.current
        return String(decoding: bytes[min(mark, bytes.count)...], as: UTF8.self)
    }

    private func setMark() {
        mark = output.current.count
    }

    /// The last complete frame in `text`, if there is one.
    static func lastFrame(in text: String) -> Frame? {
        // A frame: ESC[H, the lines separated by CR LF, ESC[J, then the cursor: hidden, or placed
        // and shown. The cursor sequence ESC[row;colH is not ESC[H, so splitting is safe.
        for chunk in text.components(separatedBy: "\u{1B}[H").reversed() {
            guard let end = chunk.range(of: "\u{1B}[J") else { continue }
            let after = chunk[end.upperBound...]
            let cursor: Frame.Cursor?
            if after.hasPrefix("\u{1B}[?25l") {
                cursor = nil
            } else if let match = after.prefixMatch(of: /\x1B\[(\d+);(\d+)H\x1B\[\?25h/) {
                cursor = Frame.Cursor(row: Int(match.1)!, column: Int(match.2)!)
            } else {
                continue
            }
            let body = String(chunk[..<end.lowerBound])
            let plain = body.replacingOccurrences(
                of: "\u{1B}\\[[0-9;?]*[A-Za-z]",
                with: "",
                options: .regularExpression
            )
            let lines = plain.components(separatedBy: "\r\n").map { line in
                String(line.reversed().drop { $0 == " " }.reversed())
            }
            return Frame(lines: lines, cursor: cursor)
        }
        return nil
    }

    /// The last complete frame drawn since the last key press or signal.
    var frame: Frame? {
        TerminalSession.lastFrame(in: outputSinceMark)
    }

    /// Waits until `condition` holds for the output written since the last key press or signal,
    /// or the program's output ended, or the deadline passed.
    ///
    /// - Returns: Whether the condition held.
    private func waitForOutput(_ condition: @escaping @Sendable (String) -> Bool) async -> Bool {
        let start = mark
        return await offThePool { [output, arrived, ended] in
            let deadline = DispatchTime.now() + TerminalSession.deadline
            while true {
                // Read the end flag first: output that arrived before it is in `output` then.
                let over = ended.current
                let bytes = output.current
                if condition(String(decoding: bytes[min(start, bytes.count)...], as: UTF8.self)) { return true }
                if over || arrived.wait(timeout: deadline) == .timedOut { return false }
            }
        }
    }

    /// Waits until the last frame drawn since the last key press or signal has exactly `lines`
    /// (and, when given, the cursor at `cursor`); records an issue showing both frames if not.
    ///
    /// - Parameters:
    ///   - lines: Every line of the screen, top to bottom, without trailing spaces.
    ///   - cursor: Where the cursor must be (row, column from 1); `nil` to not check it.
    ///   - sourceLocation: Where the expectation is, for the failure.
    /// - Returns: Whether the frame appeared.
    @discardableResult
    func waitForFrame(
        _ lines: [String],
        cursor: Frame.Cursor? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Bool {
        let matched = await waitForOutput { text in
            guard let frame = TerminalSession.lastFrame(in: text) else { return false }
            return frame.lines == lines && (cursor == nil || frame.cursor == cursor)
        }
        if !matched {
            let expected = Frame(lines: lines, cursor: cursor)
            let shown = frame.map(\.description) ?? "no complete frame since the last key"
            Issue.record(
                "the screen never showed\n\(expected)\nthe last frame was\n\(shown)",
                sourceLocation: sourceLocation
            )
        }
        return matched
    }

    /// Waits until the output since the last key press or signal contains `text`.
    ///
    /// - Returns: Whether it did before the deadline.
    @discardableResult
    func waitForOutput(
        containing text: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Bool {
        let found = await waitForOutput { $0.contains(text) }
        if !found {
            Issue.record("the output never contained \(text.debugDescription)", sourceLocation: sourceLocation)
        }
        return found
    }

    /// Waits until the program is stopped (`true`) or running (`false`), as `/proc` shows it.
    ///
    /// - Returns: Whether it got there before the deadline.
    func waitUntil(stopped: Bool) async -> Bool {
        let path = "/proc/\(processIdentifier)/stat"
        return await offThePool {
            let deadline = Date(timeIntervalSinceNow: TerminalSession.deadline)
            while Date() < deadline {
                // The state is the field after the command name in parentheses.
                if let stat = try? String(contentsOfFile: path, encoding: .utf8),
                    let close = stat.range(of: ") ", options: .backwards)
                {
                    let state = stat[close.upperBound...].prefix(1)
                    if (state == "T") == stopped { return true }
                }
                // A state change has no event to wait on; look again shortly.
                usleep(2000)
            }
            return false
        }
    }

    /// The terminal's settings now, as the program left them.
    func settings() throws -> termios {
        let descriptor = open(slaveName, O_RDWR | O_NOCTTY)
        guard descriptor >= 0 else { throw TerminalTestError(message: "cannot open \(slaveName)") }
        defer { close(descriptor) }
        var settings = termios()
        guard tcgetattr(descriptor, &settings) == 0 else {
            throw TerminalTestError(message: "cannot read the settings of \(slaveName)")
        }
        return settings
    }

    /// Whether the terminal is in raw mode: no line editing, no echo, no signals from keys.
    func isRaw() throws -> Bool {
        let flags = try settings().c_lflag
        return flags & tcflag_t(ICANON) == 0 && flags & tcflag_t(ECHO) == 0 && flags & tcflag_t(ISIG) == 0
    }

    /// Waits for the program to exit and for its last output to be read; its status.
    func waitForExit(sourceLocation: SourceLocation = #_sourceLocation) async -> Int32? {
        defer { expectNoSanitizerReport(sourceLocation: sourceLocation) }
        return await offThePool { [self] in
            guard exited.wait(timeout: .now() + TerminalSession.deadline) == .success else {
                process.terminate()
                return nil
            }
            // The slave end closes with the program; reading the master then ends.
            _ = drained.wait(timeout: .now() + TerminalSession.deadline)
            drained.signal()
            return process.terminationStatus
        }
    }

    /// Records an issue when the program printed a sanitizer report: under
    /// `swift test --sanitize=thread` the program is instrumented too, and its reports go to the
    /// terminal, where the test runner's own check does not see them.
    func expectNoSanitizerReport(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!rawOutput.contains("Sanitizer"), "the program reported:\n\(rawOutput)", sourceLocation: sourceLocation)
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGCONT)
            process.terminate()
        }
        close(master)
    }
}

/// The POSIX pseudo-terminal calls.
///
/// Glibc's Swift module does not export them (they need _XOPEN_SOURCE), so on Linux they are looked
/// up in the C library.
private enum PseudoTerminal {
    #if canImport(Glibc)
    private typealias OpenMaster = @convention(c) (Int32) -> Int32
    private typealias Control = @convention(c) (Int32) -> Int32
    private typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32

    private static func function<T>(_ name: String, as type: T.Type) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            preconditionFailure("the C library has no \(name)")
        }
        return unsafeBitCast(symbol, to: type)
    }

    static func openMaster() -> Int32 {
        function("posix_openpt", as: OpenMaster.self)(O_RDWR | O_NOCTTY)
    }

    static func grant(_ master: Int32) -> Int32 {
        function("grantpt", as: Control.self)(master)
    }

    static func unlock(_ master: Int32) -> Int32 {
        function("unlockpt", as: Control.self)(master)
    }

    static func slaveName(_ master: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 128)
        guard function("ptsname_r", as: Name.self)(master, &buffer, buffer.count) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    #else
    static func openMaster() -> Int32 { posix_openpt(O_RDWR | O_NOCTTY) }
    static func grant(_ master: Int32) -> Int32 { grantpt(master) }
    static func unlock(_ master: Int32) -> Int32 { unlockpt(master) }
    static func slaveName(_ master: Int32) -> String? { ptsname(master).map { String(cString: $0) } }
    #endif
}

/// The pseudo-terminal could not be set up.
struct TerminalTestError: Error {
    /// What failed.
    let message: String
}

/// The escape sequences the program writes when it takes the terminal and when it gives it back.
enum TerminalSequence {
    /// Alternate screen, bracketed paste on, cursor hidden, screen cleared.
    static let enter = "\u{1B}[?1049h\u{1B}[?2004h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
    /// Styles reset, bracketed paste off, cursor shown, main screen.
    static let leave = "\u{1B}[0m\u{1B}[?2004l\u{1B}[?25h\u{1B}[?1049l"
}

/// A whole screen of `rows` lines: `top` from the first line, `status` and `bottom` on the last
/// two, blank lines between.
///
/// - Parameters:
///   - top: The title line, the blank line and the list.
///   - status: The status line.
///   - bottom: The last line: the keys, or the prompt.
///   - rows: The screen's height.
/// - Returns: The lines.
func screen(
    _ top: [String],
    status: String,
    bottom: String = keysLine,
    rows: Int = Int(TerminalSession.rows)
) -> [String] {
    top + Array(repeating: "", count: max(0, rows - 2 - top.count)) + [status, bottom]
}

/// The bottom line while no prompt is open, at 80 columns.
let keysLine = " a add  e edit  space toggle  d delete  c clear  p/n history  ? help  q quit"
/// What the empty list shows.
let emptyList = [" Todo  0 items, 0 done", "", "  Nothing to do. Press a to add an item."]
