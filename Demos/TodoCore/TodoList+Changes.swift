extension TodoList {
    /// The sentence about what `action` does to this list, the list before the action: for example
    /// `Added “milk”`, `Done: “milk”`, `Cleared 2 done items`.
    ///
    /// Derived from the action and the list, so that no store keeps a message for another: the app
    /// shows it after each change, and says what an undo or a redo changed from the recorder's
    /// entries.
    ///
    /// - Parameter action: The action about to be applied to this list.
    /// - Returns: The sentence, or `nil` for an action that leaves the list as it is.
    public func change(describing action: TodoAction) -> String? {
        switch action {
        case .add(let title):
            return "Added “\(title)”"
        case .edit(let id, let title):
            return item(id).map { "Renamed “\($0.title)” to “\(title)”" }
        case .toggle(let id):
            return item(id).map { $0.isDone ? "Not done: “\($0.title)”" : "Done: “\($0.title)”" }
        case .delete(let id):
            return item(id).map { "Deleted “\($0.title)”" }
        case .clearDone:
            let removed = items.count { $0.isDone }
            return "Cleared \(removed) done item\(removed == 1 ? "" : "s")"
        case .moveCursor, .setMode, .showMessage:
            return nil
        }
    }

    /// The item whose id is `id`, if the list holds it.
    private func item(_ id: Int) -> TodoItem? {
        items.first { $0.id == id }
    }
}
