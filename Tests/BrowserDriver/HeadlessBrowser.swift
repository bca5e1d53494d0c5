// Headless Chromium driven through the DevTools protocol over a pipe (`--remote-debugging-pipe`):
// commands go in on the browser's file descriptor 3 and replies and events come out on 4, each a
// JSON text ended by a NUL byte. No WebSocket, no port: nothing but the pipe and the pages' own
// `file://` addresses. The browser runs in a process group of its own and is stopped by its process
// id, never by name.

public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A headless Chromium, started for a test or a benchmark and stopped by ``close()``.
public final class HeadlessBrowser: @unchecked Sendable {
    // @unchecked: the mutable state is in `shared`, behind its lock; the descriptors and the process id
    // are set once in `init`.

    /// Why the browser could not be used.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String

        /// A failure described by `description`.
        public init(_ description: String) {
            self.description = description
        }
    }

    /// The Chromium binary: `$DISPATCHSTORE_CHROMIUM`, or Debian's (`apt-get install chromium`), or
    /// `nil` when none is installed.
    public static var executable: String? {
        var candidates = ["/usr/lib/chromium/chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser"]
        if let chosen = ProcessInfo.processInfo.environment["DISPATCHSTORE_CHROMIUM"], !chosen.isEmpty {
            candidates.insert(chosen, at: 0)
        }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether a browser can be started here.
    public static var isAvailable: Bool {
        executable != nil
    }

    /// The process id of the browser.
    public let processIdentifier: pid_t
    private let commands: Int32
    private let replies: Int32
    private let profile: URL
    private let shared = Exchange()
    private let exited = DispatchSemaphore(value: 0)
    /// How long a command may take before it counts as failed: long, since the machine may be loaded.
    public static let timeout: Double = 120

    /// Starts the browser with a fresh profile.
    ///
    /// - Parameters:
    ///   - width: The window's width in pixels.
    ///   - height: The window's height in pixels.
    /// - Throws: ``Failure`` when no Chromium is installed or it cannot be started.
    public init(width: Int = 1400, height: Int = 900) throws {
        guard let executable = Self.executable else { throw Failure("no Chromium is installed") }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "inspector-browser-\(UUID().uuidString)"
        )
        try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
        var commandPipe: [Int32] = [0, 0]
        var replyPipe: [Int32] = [0, 0]
        guard pipe(&commandPipe) == 0, pipe(&replyPipe) == 0 else { throw Failure("pipe failed: \(errno)") }
        // Out of the way of 3 and 4, and closed in the browser except where moved to 3 and 4.
        let moved = (commandPipe + replyPipe).map { descriptor -> Int32 in
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 10)
            Glibc.close(descriptor)
            return copy
        }
        commands = moved[1]
        replies = moved[2]
        let arguments = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
            "--user-data-dir=\(profile.path)", "--no-first-run", "--no-default-browser-check",
            "--disable-dev-shm-usage", "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-default-apps", "--mute-audio",
            // A page in a tab of its own draws and runs its timers as if it were in front.
            "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
            "--disable-backgrounding-occluded-windows",
            "--window-size=\(width),\(height)", "about:blank",
        ]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, moved[0], 3)
        posix_spawn_file_actions_adddup2(&actions, moved[3], 4)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = arguments.map { strdup($0) } + [nil]
        defer {
            for argument in argv { free(argument) }
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        Glibc.close(moved[0])
        Glibc.close(moved[3])
        guard status == 0 else {
            Glibc.close(commands)
            Glibc.close(replies)
            throw Failure("cannot start \(executable): \(String(cString: strerror(status)))")
        }
        processIdentifier = pid
        let reader = Thread { [shared, replies, exited, pid] in
            Self.read(from: replies, into: shared)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            exited.signal()
        }
        reader.start()
    }

    deinit {
        close()
    }

    // MARK: Commands

    /// Sends a command and waits for its reply.
    ///
    /// - Parameters:
    ///   - method: The protocol method, such as `Page.navigate`.
    ///   - parameters: Its parameters.
    ///   - session: The page's session, for commands to a page.
    /// - Returns: The reply's `result`.
    /// - Throws: ``Failure`` with the protocol's error, or when no reply comes in time.
    @discardableResult
    public func send(
        _ method: String,
        _ parameters: [String: Any] = [:],
        session: String? = nil
    ) throws -> [String: Any] {
        let (id, waiter) = shared.register()
        var message: [String: Any] = ["id": id, "method": method, "params": parameters]
        if let session { message["sessionId"] = session }
        var bytes = try JSONSerialization.data(withJSONObject: message)
        bytes.append(0)
        let written = bytes.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let count = write(commands, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0 {
                    if errno == EINTR { continue }
                    return false
                }
                offset += count
            }
            return true
        }
        guard written else { throw Failure("the browser closed its pipe (\(method))") }
        guard waiter.wait(timeout: .now() + Self.timeout) == .success else {
            throw Failure("no reply to \(method) within \(Int(Self.timeout)) s")
        }
        let reply = shared.take(id)
        if let error = reply["error"] as? [String: Any] {
            throw Failure("\(method) failed: \(error["message"] ?? error)")
        }
        return reply["result"] as? [String: Any] ?? [:]
    }

    /// Opens a new tab and attaches to it.
    ///
    /// - Returns: The page, with the runtime, page, network and log events enabled.
    public func newPage() throws -> BrowserPage {
        let target = try send("Target.createTarget", ["url": "about:blank"])
        guard let targetID = target["targetId"] as? String else { throw Failure("no target id in \(target)") }
        let attached = try send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw Failure("no session id in \(attached)") }
        let page = BrowserPage(browser: self, session: session)
        for domain in ["Page", "Runtime", "Network", "Log"] {
            try send("\(domain).enable", session: session)
        }
        try send("Page.bringToFront", session: session)
        return page
    }

    /// Closes the browser and waits until its process has exited.
    ///
    /// Then stops whatever is left of its process group (its renderers), by the group's id.
    /// Calling it again does nothing.
    public func close() {
        guard shared.beginClosing() else { return }
        var message = Data(#"{"id":0,"method":"Browser.close"}"#.utf8)
        message.append(0)
        _ = message.withUnsafeBytes { write(commands, $0.baseAddress!, $0.count) }
        if exited.wait(timeout: .now() + 20) != .success {
            kill(-processIdentifier, SIGKILL)
            _ = exited.wait(timeout: .now() + 20)
        }
        kill(-processIdentifier, SIGKILL)
        Glibc.close(commands)
        try? FileManager.default.removeItem(at: profile)
    }

    // MARK: Events

    /// The events received for `session` so far, oldest first.
    func events(for session: String) -> [[String: Any]] {
        shared.events(for: session)
    }

    /// Waits until an event `method` arrives for `session` after `start` events, and returns it.
    func waitForEvent(_ method: String, session: String, after start: Int, timeout: Double) -> [String: Any]? {
        shared.waitForEvent(method, session: session, after: start, timeout: timeout)
    }

    private static func read(from descriptor: Int32, into shared: Exchange) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending.append(contentsOf: buffer[0..<count])
            while let end = pending.firstIndex(of: 0) {
                let message = Data(pending[..<end])
                pending.removeSubrange(...end)
                if let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any] {
                    shared.receive(object)
                }
            }
        }
        Glibc.close(descriptor)
        shared.endOfReplies()
    }
}

/// What the reader thread and the callers share, behind one lock.
private final class Exchange: @unchecked Sendable {
    // @unchecked: every property is only touched under `condition`.
    private let condition = NSCondition()
    private var nextID = 1
    private var waiters: [Int: DispatchSemaphore] = [:]
    private var replies: [Int: [String: Any]] = [:]
    private var events: [String: [[String: Any]]] = [:]
    private var closing = false

    func register() -> (Int, DispatchSemaphore) {
        condition.withLock {
            let id = nextID
            nextID += 1
            let waiter = DispatchSemaphore(value: 0)
            waiters[id] = waiter
            return (id, waiter)
        }
    }

    func take(_ id: Int) -> [String: Any] {
        condition.withLock { replies.removeValue(forKey: id) ?? [:] }
    }

    func receive(_ message: [String: Any]) {
        condition.withLock {
            if let id = message["id"] as? Int {
                replies[id] = message
                waiters.removeValue(forKey: id)?.signal()
            } else {
                events[message["sessionId"] as? String ?? "", default: []].append(message)
                condition.broadcast()
            }
        }
    }

    func endOfReplies() {
        condition.withLock {
            for waiter in waiters.values {
                waiter.signal()
            }
            waiters = [:]
            closing = true
            condition.broadcast()
        }
    }

    func beginClosing() -> Bool {
        condition.withLock {
            defer { closing = true }
            return !closing
        }
    }

    func events(for session: String) -> [[String: Any]] {
        condition.withLock { events[session] ?? [] }
    }

    func waitForEvent(_ method: String, session: String, after start: Int, timeout: Double) -> [String: Any]? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        var checked = start
        while true {
            let list = events[session] ?? []
            while checked < list.count {
                if list[checked]["method"] as? String == method { return list[checked] }
                checked += 1
            }
            if closing || !condition.wait(until: deadline) { return nil }
        }
    }
}
