/// A page that cannot be written, naming the path and the reason.
///
/// ```swift
/// do {
///     try inspector.writePage(to: path)
/// } catch {
///     print(error)  // cannot write the page /srv/run.html: No such file or directory (the directory /srv does not exist)
/// }
/// ```
public struct InspectorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let name: String

        /// The page's file cannot be created or written: a missing directory, a directory, a
        /// symbolic link loop, no permission, a full disk.
        public static let unwritableFile = Code(name: "unwritableFile")

        /// The code's name, for example `unwritableFile`.
        public var description: String {
            name
        }
    }

    /// The kind of problem.
    public let code: Code
    /// The path of the page.
    public let path: String
    /// A sentence naming the path and what is wrong.
    public let message: String

    init(_ code: Code, path: String, message: String) {
        self.code = code
        self.path = path
        self.message = message
    }

    static func unwritable(_ path: String, reason: String) -> InspectorError {
        InspectorError(.unwritableFile, path: path, message: "cannot write the page \(path): \(reason)")
    }

    /// The message, starting with a capital letter and ending with a full stop.
    public var description: String {
        guard let first = message.first else { return message }
        return first.uppercased() + message.dropFirst() + (message.hasSuffix(".") ? "" : ".")
    }
}
