/// Where in a file a problem is, and what it is: what ``ActionLogError`` and ``JournalError`` both
/// report, so that a journal error about a record file takes the action log error's whole.
struct FileProblem: Hashable, Sendable {
    /// The file or directory involved.
    let path: String
    /// The line involved, counting from 1, for problems with one line.
    let line: Int?
    /// The offset in the file of the first byte involved, when one is.
    let byteOffset: Int?
    /// The store involved, if one is.
    let storeIdentifier: String?
    /// A sentence naming the file, the line or store, and what is wrong.
    let message: String

    /// A problem; `message` is made a sentence (a lowercase first letter capitalized, a final period
    /// added where it has none).
    init(path: String, line: Int?, byteOffset: Int?, storeIdentifier: String?, message: String) {
        self.path = path
        self.line = line
        self.byteOffset = byteOffset
        self.storeIdentifier = storeIdentifier
        self.message = sentence(message)
    }
}
