import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `todo` program running on a pseudo-terminal, driven by key presses.
private final class TerminalSession: @unchecked Sendable {
    // @unchecked: `output` is a Shared value; the descriptors are only written from the test's thread.
    private let process = Process()
    private let master: Int32
    private let output = Shared<[UInt8]>([])
    private let exited = DispatchSemaphore(value: 0)
    /// Signalled when the reader has read everything the program wrote (end of file on the master).
    private let drained = DispatchSemaphore(value: 0)

    init(file: String, environment: [String: String] = [:], rows: UInt16 = 20, columns: UInt16 = 100) throws {
        let descriptor = PseudoTerminal.openMaster()
        guard descriptor >= 0, PseudoTerminal.grant(descriptor) == 0, PseudoTerminal.unlock(descriptor) == 0,
            let name = PseudoTerminal.slaveName(descriptor)
        else {
            throw TerminalTestError(message: "cannot open a pseudo-terminal")
        }
        master = descriptor
        var window = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = withUnsafeMutablePointer(to: &window) { ioctl(descriptor, UInt(TIOCSWINSZ), $0) }
        let slave = open(name, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw TerminalTestError(message: "cannot open \(name)") }
        let handle = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        process.executableURL = Executables.directory.appendingPathComponent("todo")
        process.arguments = ["--file", file]
        process.environment = ProcessInfo.processInfo.environment.merging(["TERM": "xterm"].merging(environment) { $1 })
        { $1 }
        process.standardInput = handle
        process.standardOutput = handle
        process.standardError = handle
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        // The child has its own copies now; without closing this one, reading the master would
        // never reach the end when the child exits.
        try handle.close()
        let master = master
        let output = output
        let drained = drained
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(master, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                output.withLock { $0.append(contentsOf: buffer[0..<count]) }
            }
            drained.signal()
        }
    }

    var processIdentifier: Int32 {
        process.processIdentifier
    }

    func press(_ keys: String) {
        let bytes = Array(keys.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    var rawOutput: String {
        String(decoding: output.current, as: UTF8.self)
    }

    /// The text of the last complete frame, one string per screen line, without escape codes.
    var screen: [String] {
        let frames = rawOutput.components(separatedBy: "\u{1B}[H")
        guard let last = frames.last(where: { $0.contains("\u{1B}[J") }) ?? frames.last else { return [] }
        let text = last.replacingOccurrences(of: "\u{1B}\\[[0-9;?]*[A-Za-z]", with: "", options: .regularExpression)
        return text.components(separatedBy: "\r\n").map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// Waits until the screen satisfies `condition`, polling without holding a thread.
    func waitForScreen(_ description: String, _ condition: ([String]) -> Bool) async -> Bool {
        let deadline = Date(timeIntervalSinceNow: 30)
        while Date() < deadline {
            if condition(screen) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the screen never showed \(description); it shows:\n\(screen.joined(separator: "\n"))")
        return false
    }

    /// Waits for the program to exit and for its last output to be read; its status.
    func waitForExit() async -> Int32? {
        await offThePool { [self] in
            guard exited.wait(timeout: .now() + 30) == .success else {
                process.terminate()
                return nil
            }
            // The slave end closes with the program; reading the master then ends.
            _ = drained.wait(timeout: .now() + 30)
            return process.terminationStatus
        }
    }

    deinit {
        if process.isRunning { process.terminate() }
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

private struct TerminalTestError: Error {
    let message: String
}

@Suite("The todo program in a terminal")
struct TodoTerminalTests {
    @Test("press a, type a title, Enter, then p and n: the screen follows and the terminal is restored")
    func addThenPreviousAndNext() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("todos.json").path
        let session = try TerminalSession(file: file)

        #expect(await session.waitForScreen("the empty list") { $0.contains("Nothing to do. Press a to add an item.") })
        #expect(session.screen.contains("history 0/0"))
        session.press("a")
        #expect(await session.waitForScreen("the title prompt") { $0.contains("Title:") })
        session.press("buy milk")
        #expect(await session.waitForScreen("the typed title") { $0.contains("Title: buy milk") })
        session.press("\r")
        #expect(await session.waitForScreen("the new item") { $0.contains("> [ ] buy milk") })
        #expect(session.screen.contains { $0.hasPrefix("history 1/1") })

        session.press("p")
        #expect(
            await session.waitForScreen("the list before the change") { screen in
                screen.contains { $0.hasPrefix("history 0/1") } && !screen.contains("> [ ] buy milk")
            }
        )
        #expect(session.screen.contains("Nothing to do. Press a to add an item."))

        session.press("n")
        #expect(
            await session.waitForScreen("the change again") { screen in
                screen.contains { $0.hasPrefix("history 1/1") } && screen.contains("> [ ] buy milk")
            }
        )

        session.press(" ")
        #expect(await session.waitForScreen("the item done") { $0.contains("> [x] buy milk") })
        session.press("q")
        #expect(await session.waitForExit() == 0)
        #expect(session.rawOutput.hasSuffix("\u{1B}[?25h\u{1B}[?1049l"))
        #expect(try String(contentsOfFile: file, encoding: .utf8).contains("\"title\" : \"buy milk\""))
    }

    @Test("arrow keys move, d deletes, Esc cancels a prompt, and the list survives a restart")
    func moreKeys() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.file("todos.json").path
        let session = try TerminalSession(file: file)
        #expect(await session.waitForScreen("the empty list") { $0.contains("Nothing to do. Press a to add an item.") })
        for title in ["one", "two", "three"] {
            session.press("a")
            #expect(await session.waitForScreen("the prompt") { $0.contains("Title:") })
            session.press("\(title)\r")
            #expect(await session.waitForScreen(title) { $0.contains("> [ ] \(title)") })
        }
        session.press("\u{1B}[A")
        #expect(await session.waitForScreen("the selection moved up") { $0.contains("> [ ] two") })
        session.press("d")
        #expect(await session.waitForScreen("two deleted") { !$0.contains("[ ] two") && $0.contains("[ ] three") })
        session.press("a")
        #expect(await session.waitForScreen("the prompt") { $0.contains("Title:") })
        session.press("never\u{1B}")
        #expect(
            await session.waitForScreen("the prompt gone") { screen in !screen.contains { $0.hasPrefix("Title:") } }
        )
        session.press("q")
        #expect(await session.waitForExit() == 0)

        let again = try TerminalSession(file: file)
        #expect(await again.waitForScreen("the saved list") { $0.contains("> [ ] one") && $0.contains("[ ] three") })
        #expect(!again.screen.contains { $0.contains("never") })
        again.press("\u{3}")
        #expect(await again.waitForExit() == 0)
        #expect(again.rawOutput.hasSuffix("\u{1B}[?25h\u{1B}[?1049l"))
    }

    @Test("NO_COLOR turns the text styles off")
    func noColor() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        for (environment, styled) in [(["NO_COLOR": ""], true), (["NO_COLOR": "1"], false)] {
            let session = try TerminalSession(file: directory.file("todos.json").path, environment: environment)
            #expect(await session.waitForScreen("the list") { $0.contains { $0.hasPrefix("history") } })
            session.press("q")
            #expect(await session.waitForExit() == 0)
            #expect(session.rawOutput.contains("\u{1B}[1m") == styled)
        }
    }

    @Test("SIGTERM restores the terminal before the program exits")
    func terminate() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let session = try TerminalSession(file: directory.file("todos.json").path)
        #expect(await session.waitForScreen("the list") { $0.contains { $0.hasPrefix("history") } })
        session.terminate()
        #expect(await session.waitForExit() == 128 + SIGTERM)
        #expect(session.rawOutput.hasSuffix("\u{1B}[?25h\u{1B}[?1049l"))
    }
}

extension TerminalSession {
    fileprivate func terminate() {
        kill(processIdentifier, SIGTERM)
    }
}
