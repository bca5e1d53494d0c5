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
    // @unchecked: `prompt` and `quitAsked` are only touched while holding `lock`, which is also
    // held while a frame is computed and written, so that frames are drawn in the order of the
    // states they show. The rest is immutable, or used by the key-reading thread only.
    private let app: TodoApp
    private let terminal = Terminal()
    private let screen: Screen
    private let lock = NSLock()
    /// The text being typed, while a prompt is open.
    private var prompt: LineEditor?
    /// Whether `q` was pressed while the list could not be saved: the next `q` quits anyway.
    private var quitAsked = false
    private var signalSources: [any DispatchSourceSignal] = []
    private let signalQueue = DispatchQueue(label: "todo.signals")

    /// Creates the interface.
    ///
    /// - Parameters:
    ///   - app: The app to show and drive.
    ///   - styled: Whether to use colours and other text styles.
    init(app: TodoApp, styled: Bool) {
        self.app = app
        self.screen = Screen(styled: styled)
    }

    /// Runs until the user quits; restores the terminal on the way out, also on SIGTERM, SIGINT
    /// and SIGHUP (after one more try to save a list whose save failed), and while suspended.
    ///
    /// - Returns: Why the list is not saved, when the last try on the way out failed too.
    /// - Throws: ``TerminalError`` when the terminal cannot be switched to raw mode.
    func run() throws -> TodoStorage.Failure? {
        try terminal.enterFullScreen()
        defer { terminal.restore() }
        installSignalHandlers()
        let subscriptions = [
            app.list.subscribe { [weak self] _, _ in self?.redraw() },
            app.interface.subscribe { [weak self] _, _ in self?.redraw() },
            app.recorder.subscribe { [weak self] in self?.redraw() },
        ]
        defer {
            for subscription in subscriptions {
                subscription.cancel()
            }
        }
        redraw()
        while true {
            switch handle(terminal.readKey()) {
            case .continue:
                continue
            case .quit:
                return app.saveNow()
            }
        }
    }

    /// Draws the current state; safe from any thread.
    ///
    /// Called on every change of the stores, and by the app's save-status callback.
    func redraw() {
        lock.withLock {
            let (rows, columns) = terminal.size
            terminal.draw(screen.frame(for: app, prompt: &prompt, rows: rows, columns: columns))
        }
    }

    /// What to do after a key.
    private enum Next {
        /// Read the next key.
        case `continue`
        /// Leave the loop and quit.
        case quit
    }

    /// Handles one key.
    private func handle(_ key: Key) -> Next {
        switch key {
        case .interrupt, .endOfInput:
            return .quit
        case .suspend:
            suspend()
            return .continue
        default:
            break
        }
        if key != .character("q") { lock.withLock { quitAsked = false } }
        switch app.interface.state.mode {
        case .adding, .editing:
            handlePromptKey(key)
        case .help:
            if key == .character("q") { return quit() }
            app.perform(.setMode(.browsing))
            if case .paste = key { app.perform(.showMessage("Pasted text goes into a prompt: press a, then paste")) }
        case .browsing:
            return handleBrowsingKey(key)
        }
        return .continue
    }

    /// Quits, unless the list cannot be saved and this is the first `q` since.
    private func quit() -> Next {
        guard app.saveNow() != nil else { return .quit }
        let asked = lock.withLock {
            defer { quitAsked = true }
            return quitAsked
        }
        if asked { return .quit }
        app.perform(.showMessage("The list is not saved. Press q again to quit without saving it"))
        return .continue
    }

    /// Handles a key while the list is shown; every key either acts or says why it does not.
    private func handleBrowsingKey(_ key: Key) -> Next {
        let items = app.list.state.items
        let cursor = app.interface.state.cursor
        switch key {
        case .character("q"):
            return quit()
        case .character("a"):
            openPrompt(LineEditor(), mode: .adding)
        case .character("e"):
            guard let item = app.selectedItem else { return tell("Nothing to edit: the list is empty") }
            openPrompt(LineEditor(item.title), mode: .editing(id: item.id))
        case .character("j"), .down:
            guard !items.isEmpty else { return tell("Nothing to move to: the list is empty") }
            guard cursor < items.count - 1 else { return tell("Already at the last item") }
            app.perform(.moveCursor(by: 1))
        case .character("k"), .up:
            guard !items.isEmpty else { return tell("Nothing to move to: the list is empty") }
            guard cursor > 0 else { return tell("Already at the first item") }
            app.perform(.moveCursor(by: -1))
        case .character(" "), .character("x"):
            guard let item = app.selectedItem else { return tell("Nothing to mark done: the list is empty") }
            app.perform(.toggle(id: item.id))
        case .character("d"):
            guard let item = app.selectedItem else { return tell("Nothing to delete: the list is empty") }
            app.perform(.delete(id: item.id))
        case .character("c"):
            guard items.contains(where: \.isDone) else { return tell("No done items to clear") }
            app.perform(.clearDone)
        case .character("p"):
            if !app.previous() { return tell("Already at the oldest change") }
        case .character("n"):
            if !app.next() { return tell("Already at the newest change") }
        case .character("?"):
            app.perform(.setMode(.help))
        case .paste:
            return tell("Pasted text goes into a prompt: press a, then paste")
        case .escape:
            return tell("Nothing to cancel")
        default:
            return tell("\(TerminalInterface.name(of: key)) does nothing here; press ? for the keys")
        }
        return .continue
    }

    /// Shows `message` in the status line.
    private func tell(_ message: String) -> Next {
        app.perform(.showMessage(message))
        return .continue
    }

    /// Opens the prompt holding `editor`'s text, for adding or editing.
    private func openPrompt(_ editor: LineEditor, mode: Mode) {
        lock.withLock { prompt = editor }
        app.perform(.setMode(mode))
    }

    /// Closes the prompt; the caller sets the mode and the message.
    private func closePrompt() {
        lock.withLock { prompt = nil }
    }

    /// Changes the prompt's text and redraws it.
    private func edit(_ change: (inout LineEditor) -> Void) {
        lock.withLock {
            guard var editor = prompt else { return }
            change(&editor)
            prompt = editor
        }
        redraw()
    }

    /// Handles a key while a prompt is open: editing keys edit, Enter confirms, Esc cancels.
    private func handlePromptKey(_ key: Key) {
        switch key {
        case .enter:
            submitPrompt()
        case .escape:
            closePrompt()
            let mode = app.interface.state.mode
            app.perform(.setMode(.browsing))
            if case .editing(let id) = mode, let item = app.list.state.items.first(where: { $0.id == id }) {
                app.perform(.showMessage("Edit cancelled; “\(item.title)” is unchanged"))
            } else {
                app.perform(.showMessage("Nothing added"))
            }
        case .backspace: edit { $0.deleteBackward() }
        case .delete, .control("d"): edit { $0.deleteForward() }
        case .left, .control("b"): edit { $0.moveLeft() }
        case .right, .control("f"): edit { $0.moveRight() }
        case .home, .control("a"): edit { $0.moveToStart() }
        case .end, .control("e"): edit { $0.moveToEnd() }
        case .control("u"): edit { $0.deleteToStart() }
        case .control("w"): edit { $0.deleteWordBackward() }
        case .character(let character):
            edit { $0.insert(String(character)) }
        case .paste(let text):
            paste(text)
        default:
            app.perform(
                .showMessage("\(TerminalInterface.name(of: key)) does nothing here: Enter confirms, Esc cancels")
            )
        }
    }

    /// Confirms the prompt: adds or renames, or says why not (an empty title, an unchanged one).
    private func submitPrompt() {
        let text = (lock.withLock { prompt?.text } ?? "").trimmingCharacters(in: .whitespaces)
        let mode = app.interface.state.mode
        if case .editing(let id) = mode {
            let old = app.list.state.items.first { $0.id == id }?.title ?? ""
            if text.isEmpty {
                app.perform(.showMessage("A title cannot be empty: type one, or press Esc to keep “\(old)”"))
                return
            }
            closePrompt()
            if text == old {
                app.perform(.setMode(.browsing))
                app.perform(.showMessage("“\(old)” is unchanged"))
            } else {
                app.perform(.edit(id: id, title: text))
            }
        } else {
            closePrompt()
            if text.isEmpty {
                app.perform(.setMode(.browsing))
                app.perform(.showMessage("Nothing added: the title was empty"))
            } else {
                app.perform(.add(title: text))
            }
        }
    }

    /// Puts pasted text into the prompt: as text only, never as keys.
    ///
    /// At the add prompt, text with line breaks adds one item per non-blank line (the first
    /// line joined to what was typed before it); at the edit prompt, line breaks become spaces.
    private func paste(_ text: String) {
        let lines = TerminalInterface.lines(of: text)
        guard lines.count > 1 else {
            edit { $0.insert(lines.first ?? "") }
            return
        }
        if case .editing = app.interface.state.mode {
            edit { $0.insert(lines.joined(separator: " ")) }
            app.perform(.showMessage("The pasted line breaks became spaces"))
            return
        }
        var titles = lines
        let typed: LineEditor? = lock.withLock {
            defer { prompt = nil }
            return prompt
        }
        if var typed {
            typed.insert(titles[0])
            titles[0] = typed.text
        }
        titles = titles.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard !titles.isEmpty else {
            app.perform(.setMode(.browsing))
            app.perform(.showMessage("Nothing added: the pasted lines were blank"))
            return
        }
        // One paste, one step of the history: p takes every pasted item back at once.
        app.performAsOneStep(titles.map { .add(title: $0) })
        if titles.count > 1 { app.perform(.showMessage("Added \(titles.count) items from the paste")) }
    }

    /// The pasted text's lines, with tabs as spaces and other control characters removed.
    private static func lines(of text: String) -> [String] {
        var lines: [String] = [""]
        for character in text {
            switch character {
            case "\r\n", "\n", "\r":
                lines.append("")
            case "\t":
                lines[lines.count - 1].append(" ")
            default:
                if character.unicodeScalars.allSatisfy({ $0.properties.generalCategory != .control }) {
                    lines[lines.count - 1].append(character)
                }
            }
        }
        return lines
    }

    /// A key's name for a message, for example `“z”`, `Ctrl-G` or `Left`.
    private static func name(of key: Key) -> String {
        switch key {
        case .character(let character): "“\(character)”"
        case .control(let character): "Ctrl-\(character.uppercased())"
        case .paste: "Pasting"
        case .up: "Up"
        case .down: "Down"
        case .left: "Left"
        case .right: "Right"
        case .home: "Home"
        case .end: "End"
        case .delete: "Delete"
        case .enter: "Enter"
        case .escape: "Esc"
        case .backspace: "Backspace"
        case .tab: "Tab"
        case .interrupt: "Ctrl-C"
        case .suspend: "Ctrl-Z"
        case .endOfInput: "Ctrl-D"
        case .unknown(let sequence): sequence
        }
    }

    /// Gives the terminal back to the shell and stops the process (Ctrl-Z, SIGTSTP); when the
    /// shell continues it (`fg`, SIGCONT), takes the terminal again and redraws.
    private func suspend() {
        terminal.restore()
        // The default action stops the process. Keep the handler libdispatch installed for the
        // SIGTSTP source (on Linux), to put it back afterwards.
        var stopAction = sigaction()
        #if canImport(Darwin)
        stopAction.__sigaction_u.__sa_handler = SIG_DFL
        #else
        stopAction.__sigaction_handler.sa_handler = SIG_DFL
        #endif
        sigemptyset(&stopAction.sa_mask)
        var handler = sigaction()
        sigaction(SIGTSTP, &stopAction, &handler)
        // This thread may have the signal blocked, as libdispatch's threads do.
        var stop = sigset_t()
        sigemptyset(&stop)
        sigaddset(&stop, SIGTSTP)
        var mask = sigset_t()
        pthread_sigmask(SIG_UNBLOCK, &stop, &mask)
        raise(SIGTSTP)
        // Continued (or never stopped: in an orphaned process group the signal is discarded).
        pthread_sigmask(SIG_SETMASK, &mask, nil)
        sigaction(SIGTSTP, &handler, nil)
        resume()
    }

    /// Takes the terminal again after the process was stopped, and redraws everything.
    private func resume() {
        do {
            try terminal.enterFullScreen()
        } catch {
            // Nothing to draw on; the next key read tells whether the terminal is still there.
            return
        }
        redraw()
    }

    private func installSignalHandlers() {
        for signalNumber in [SIGTERM, SIGINT, SIGHUP] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: signalQueue)
            source.setEventHandler { [terminal, app] in
                terminal.restore()
                // A save that failed gets one more try; the handler is the last chance to say so.
                if let failure = app.saveNow() {
                    standardError("todo: \(failure); the changes since the last save are lost")
                }
                exit(128 + signalNumber)
            }
            source.resume()
            signalSources.append(source)
        }
        signal(SIGTSTP, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: signalQueue)
        stop.setEventHandler { [weak self] in self?.suspend() }
        stop.resume()
        signalSources.append(stop)
        // SIGCONT after SIGSTOP, which cannot be caught: the shell may have changed the terminal.
        let proceed = DispatchSource.makeSignalSource(signal: SIGCONT, queue: signalQueue)
        proceed.setEventHandler { [weak self] in
            guard let self else { return }
            terminal.reclaim()
            redraw()
        }
        proceed.resume()
        signalSources.append(proceed)
        signal(SIGWINCH, SIG_IGN)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: signalQueue)
        resize.setEventHandler { [weak self] in self?.redraw() }
        resize.resume()
        signalSources.append(resize)
    }
}
