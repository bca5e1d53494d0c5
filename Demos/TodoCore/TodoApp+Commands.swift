import DispatchStore

extension TodoApp {
    /// What running a line command produced.
    public enum Outcome: Equatable, Sendable {
        /// Lines for standard output (possibly none).
        case output([String])
        /// A sentence for standard error; the program goes on.
        case failure(String)
        /// Stop reading commands.
        case quit
    }

    /// Runs one line command.
    ///
    /// - Parameter command: The command.
    /// - Returns: Its output, an error sentence, or ``Outcome/quit``.
    public func run(_ command: Command) -> Outcome {
        switch command {
        case .add(let title):
            perform(.add(title: title))
        case .edit(let number, let title):
            guard let item = item(number) else { return noItem(number) }
            perform(.edit(id: item.id, title: title))
        case .toggle(let number):
            guard let item = item(number) else { return noItem(number) }
            perform(.toggle(id: item.id))
        case .delete(let number):
            guard let item = item(number) else { return noItem(number) }
            perform(.delete(id: item.id))
        case .clear:
            perform(.clearDone)
        case .previous:
            guard previous() else { return .failure("prev: already at the oldest change (\(historyLabel))") }
        case .next:
            guard next() else { return .failure("next: already at the newest change (\(historyLabel))") }
        case .list:
            return .output(TodoApp.lines(for: list.state.items))
        case .help:
            return .output(Command.usage.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        case .quit:
            return .quit
        }
        return .output([])
    }

    /// The items as `list` prints them: `1. [ ] title`, `2. [x] title`.
    ///
    /// - Parameter items: The items.
    /// - Returns: One line per item.
    public static func lines(for items: [TodoItem]) -> [String] {
        items.enumerated().map { index, item in "\(index + 1). [\(item.isDone ? "x" : " ")] \(item.title)" }
    }

    private func item(_ number: Int) -> TodoItem? {
        let items = list.state.items
        return items.indices.contains(number - 1) ? items[number - 1] : nil
    }

    private func noItem(_ number: Int) -> Outcome {
        let count = list.state.items.count
        return .failure("no item \(number); the list has \(count) item\(count == 1 ? "" : "s")")
    }
}
