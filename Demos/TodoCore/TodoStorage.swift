public import Foundation

/// Where the list is kept: a JSON file, written atomically after each change.
public struct TodoStorage: Sendable {
    /// Why the file could not be used.
    public struct Failure: Error, CustomStringConvertible {
        /// The file involved.
        public let path: String
        /// What went wrong.
        public let reason: String

        /// A sentence naming the file and the reason.
        public var description: String {
            "\(path): \(reason)"
        }
    }

    private struct File: Codable {
        var version: Int
        var items: [TodoItem]
    }

    /// The file.
    public let url: URL

    /// Creates a storage for the file at `url`.
    public init(url: URL) {
        self.url = url
    }

    /// The default file: `$XDG_DATA_HOME/dispatch-todo/todos.json`, or
    /// `~/.local/share/dispatch-todo/todos.json` when `XDG_DATA_HOME` is not set.
    ///
    /// - Parameter environment: The process environment.
    /// - Returns: The file's URL.
    public static func defaultURL(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        let base: URL
        if let data = environment["XDG_DATA_HOME"], !data.isEmpty {
            base = URL(fileURLWithPath: data, isDirectory: true)
        } else {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(
                ".local/share",
                isDirectory: true
            )
        }
        return base.appendingPathComponent("dispatch-todo/todos.json")
    }

    /// Reads the items.
    ///
    /// - Returns: The items; none when the file does not exist yet.
    /// - Throws: ``Failure`` when the file exists but cannot be read or is not a valid todo file.
    public func load() throws -> [TodoItem] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw Failure(path: url.path, reason: "cannot be read (\(error.localizedDescription))")
        }
        do {
            let file = try JSONDecoder().decode(File.self, from: data)
            guard file.version == 1 else {
                throw Failure(path: url.path, reason: "has version \(file.version); this program reads version 1")
            }
            return file.items
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(path: url.path, reason: "is not a valid todo file (\(describe(error)))")
        }
    }

    /// Writes the items to a temporary file next to the file, then renames it over the file.
    ///
    /// - Parameter items: The items to keep.
    /// - Throws: ``Failure`` when the directory cannot be created or the file cannot be written.
    public func save(_ items: [TodoItem]) throws {
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            var data = try encoder.encode(File(version: 1, items: items))
            data.append(0x0A)
            try data.write(to: url, options: .atomic)
        } catch {
            throw Failure(path: url.path, reason: "cannot be written (\(error.localizedDescription))")
        }
    }

    private func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context):
            "corrupted data: \(context.debugDescription)"
        case DecodingError.keyNotFound(let key, _):
            "missing key '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "unexpected value at \(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default:
            "\(error)"
        }
    }
}
