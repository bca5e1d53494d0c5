import Foundation
import TodoCore

/// Reads one command per line from standard input; used when it is not a terminal.
struct LineInterface {
    let app: TodoApp

    /// Runs the commands until `quit` or the end of input.
    func run() {
        var lineNumber = 0
        while let line = readLine(strippingNewline: true) {
            lineNumber += 1
            do {
                guard let command = try Command.parse(line) else { continue }
                switch app.run(command) {
                case .output(let lines):
                    for line in lines {
                        print(line)
                    }
                case .failure(let message):
                    standardError("todo: line \(lineNumber): \(message)")
                case .quit:
                    return
                }
            } catch {
                standardError("todo: line \(lineNumber): \(error)")
            }
        }
    }
}

/// Writes a line to standard error.
func standardError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}
