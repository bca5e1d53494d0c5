import DispatchStore

/// The page's text of each action already written, so that an action equal to one met before is
/// not encoded again: a log repeats the same few actions many times.
///
/// Actions are matched by their type and their bytes. While both actions are alive, equal bytes
/// mean the same values: the same scalars, the same inline short strings, the same storage of
/// longer strings and collections (which nobody can change while both share it), the same
/// objects. The rows keep every action alive while the page is written, and the texts are those
/// of one page (their struct fields are numbered in its key table), so the texts live as long as
/// the page's ``PageData``. Bytes that differ only say nothing: the action is encoded.
struct ActionTexts {
    private var texts: [ValueBytes: [UInt8]] = [:]

    /// The most texts kept; past it, they are forgotten and found again.
    static let capacity = 4_096

    /// The key of `action`: its type and bytes; `nil` when it is over ``ValueBytes/capacity`` bytes.
    static func key(of action: any ActionType) -> ValueBytes? {
        func make<Action: ActionType>(_ action: Action) -> ValueBytes? {
            ValueBytes(action)
        }
        return make(action)
    }

    /// The text kept for an action with `key`.
    func text(for key: ValueBytes) -> [UInt8]? {
        texts[key]
    }

    /// Keeps the text of the action with `key`.
    mutating func keep(_ text: [UInt8], for key: ValueBytes) {
        if texts.count >= Self.capacity { texts.removeAll(keepingCapacity: true) }
        texts[key] = text
    }
}
