import DispatchStore
import Foundation
import TodoCore

/// Reads one command per line from standard input; used when it or standard output is not a
/// terminal.
final class LineInterface: Sendable {
    /// The app the commands run against.
    private let app: TodoApp
    /// The line being run and whether a save failed.
    ///
    /// The line's number counts from 1, for messages; a failed save makes the exit status 1. Locked:
    /// the app's save reports may come from another thread.
    private let progress = Locked((lineNumber: 0, saveFailed: false))

    /// Creates the interface.
    ///
    /// - Parameter app: The app the commands run against.
    init(app: TodoApp) {
        self.app = app
    }

    /// Runs the commands until `quit` or the end of input, then tries once more to save the list
    /// if a save failed.
    ///
    /// - Returns: The exit status: 0, or 1 when a change could not be saved.
    func run() -> Int32 {
        while let line = readLine(strippingNewline: true) {
            let number = progress.withLock { progress in
                progress.lineNumber += 1
                return progress.lineNumber
            }
            do {
                guard let command = try Command.parse(line) else { continue }
                switch app.run(command) {
                case .output(let lines):
                    for line in lines {
                        print(line)
                    }
                case .failure(let message):
                    standardError("todo: line \(number): \(message)")
                case .quit:
                    return finish()
                }
            } catch {
                standardError("todo: line \(number): \(error)")
            }
        }
        return finish()
    }

    /// Reports a failed save, or that the file holds the list again, on standard error.
    ///
    /// - Parameter failure: Why the save failed, or `nil` when it worked again.
    func saveStatusChanged(_ failure: TodoStorage.Failure?) {
        let number = progress.withLock { progress in
            if failure != nil { progress.saveFailed = true }
            return progress.lineNumber
        }
        if let failure {
            standardError("todo: line \(number): \(failure); the next change tries again")
        } else {
            standardError("todo: line \(number): the list is saved again")
        }
    }

    /// Tries once more to save a list whose save failed; the exit status.
    private func finish() -> Int32 {
        if let failure = app.saveNow() {
            standardError("todo: \(failure); the changes since the last save are lost")
            return 1
        }
        return progress.withLock { $0.saveFailed } ? 1 : 0
    }
}

/// Writes a line to standard error.
func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
