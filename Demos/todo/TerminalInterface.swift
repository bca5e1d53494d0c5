import Dispatch
import DispatchStore
import Foundation
import TodoCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The full-screen interface: reads keys, performs actions, redraws on every state change.
final class TerminalInterface: @unchecked Sendable {
    // @unchecked: `prompt` is only touched while holding `lock`; the rest is immutable.
    private let app: TodoApp
    private let terminal = Terminal()
    private let screen: Screen
    private let lock = NSLock()
    private var prompt: String?
    private var signalSources: [any DispatchSourceSignal] = []
    private let signalQueue = DispatchQueue(label: "todo.signals")

    init(app: TodoApp, styled: Bool) {
        self.app = app
        self.screen = Screen(styled: styled)
    }

    /// Runs until the user quits; restores the terminal on the way out, also on SIGTERM and SIGINT.
    func run() throws {
        try terminal.enterFullScreen()
        defer { terminal.restore() }
        installSignalHandlers()
        let subscriptions = [
            app.list.subscribe { [weak self] _, _ in self?.redraw() },
            app.interface.subscribe { [weak self] _, _ in self?.redraw() },
            app.recorder.subscribe { [weak self] in self?.redraw() },
        ]
        redraw()
        while handle(terminal.readKey()) {}
        for subscription in subscriptions {
            subscription.cancel()
        }
    }

    private func redraw() {
        let (rows, columns) = terminal.size
        let prompt = lock.withLock { self.prompt }
        terminal.draw(screen.frame(for: app, prompt: prompt, rows: rows, columns: columns))
    }

    /// Handles one key; `false` to quit.
    private func handle(_ key: Key) -> Bool {
        switch key {
        case .interrupt, .endOfInput:
            return false
        default:
            break
        }
        switch app.interface.state.mode {
        case .adding, .editing:
            handlePromptKey(key)
        case .help:
            if key == .character("q") { return false }
            app.perform(.setMode(.browsing))
        case .browsing:
            return handleBrowsingKey(key)
        }
        return true
    }

    private func handleBrowsingKey(_ key: Key) -> Bool {
        switch key {
        case .character("q"):
            return false
        case .character("a"):
            lock.withLock { prompt = "" }
            app.perform(.setMode(.adding))
        case .character("e"):
            guard let item = app.selectedItem else {
                app.perform(.showMessage("Nothing to edit"))
                return true
            }
            lock.withLock { prompt = item.title }
            app.perform(.setMode(.editing(id: item.id)))
        case .character("j"), .down:
            app.perform(.moveCursor(by: 1))
        case .character("k"), .up:
            app.perform(.moveCursor(by: -1))
        case .character(" "), .character("x"):
            if let item = app.selectedItem { app.perform(.toggle(id: item.id)) }
        case .character("d"):
            if let item = app.selectedItem { app.perform(.delete(id: item.id)) }
        case .character("c"):
            if app.list.state.items.contains(where: \.isDone) {
                app.perform(.clearDone)
            } else {
                app.perform(.showMessage("No done items to clear"))
            }
        case .character("p"):
            if !app.previous() { app.perform(.showMessage("Already at the oldest change")) }
        case .character("n"):
            if !app.next() { app.perform(.showMessage("Already at the newest change")) }
        case .character("?"):
            app.perform(.setMode(.help))
        default:
            break
        }
        return true
    }

    private func handlePromptKey(_ key: Key) {
        switch key {
        case .enter:
            let title = (lock.withLock { prompt } ?? "").trimmingCharacters(in: .whitespaces)
            let mode = app.interface.state.mode
            lock.withLock { prompt = nil }
            if title.isEmpty {
                app.perform(.setMode(.browsing))
            } else if case .editing(let id) = mode {
                app.perform(.edit(id: id, title: title))
            } else {
                app.perform(.add(title: title))
            }
        case .escape:
            lock.withLock { prompt = nil }
            app.perform(.setMode(.browsing))
        case .backspace:
            lock.withLock { _ = prompt?.popLast() }
            redraw()
        case .character(let character):
            lock.withLock { prompt?.append(character) }
            redraw()
        default:
            break
        }
    }

    private func installSignalHandlers() {
        for signalNumber in [SIGTERM, SIGINT, SIGHUP] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: signalQueue)
            source.setEventHandler { [terminal] in
                terminal.restore()
                exit(128 + signalNumber)
            }
            source.resume()
            signalSources.append(source)
        }
        signal(SIGWINCH, SIG_IGN)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: signalQueue)
        resize.setEventHandler { [weak self] in self?.redraw() }
        resize.resume()
        signalSources.append(resize)
    }
}
