public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the list is kept: a JSON file, written atomically after each change.
public struct TodoStorage: Sendable {
    /// Why the file could not be read or written: the file, and the reason in words.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// What was being done when it failed.
        public enum Operation: Equatable, Sendable {
            /// Reading the list at start.
            case load
            /// Writing the list after a change.
            case save
        }

        /// What was being done.
        public let operation: Operation
        /// The file involved.
        public let path: String
        /// What went wrong, as a clause that can follow the path, for example
        /// `/home/me/notes is a file, not a directory`.
        public let reason: String

        /// Creates a failure.
        ///
        /// - Parameters:
        ///   - operation: What was being done.
        ///   - path: The file involved.
        ///   - reason: What went wrong, in words.
        public init(_ operation: Operation, path: String, reason: String) {
            self.operation = operation
            self.path = path
            self.reason = reason
        }

        /// What failed, on which file, and why, for example
        /// `cannot save /home/me/notes/todos.json: /home/me/notes is a file, not a directory`.
        public var description: String {
            "\(operation == .load ? "cannot read" : "cannot save") \(path): \(reason)"
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

    /// The largest todo file read, in bytes: 16 MiB.
    ///
    /// A larger file is refused without being read (100,000 items take about 10 MB).
    public static let maximumFileSize = 16 << 20

    /// Reads the items.
    ///
    /// A missing file is an empty list, and so is a path whose directory is missing or is a file
    /// (``saveProblem()`` says why such a list cannot be saved yet). The file is read only when it
    /// is a regular file of at most ``maximumFileSize`` bytes.
    ///
    /// - Returns: The items; none when the file does not exist yet.
    /// - Throws: ``Failure`` when the file exists but cannot be read or is not a valid todo file: a
    ///   directory, a device, a symbolic link loop, an empty or too large file, one that changed
    ///   while it was read.
    public func load() throws(Failure) -> [TodoItem] {
        var status = stat()
        guard stat(url.path, &status) == 0 else {
            let code = errno
            // Missing, or a directory on the way missing or in the way: saving creates it or says why.
            if code == ENOENT || code == ENOTDIR { return [] }
            let loop = code == ELOOP ? " (a symbolic link loop)" : ""
            throw Failure(.load, path: url.path, reason: Self.describe(errno: code) + loop)
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            break
        case S_IFDIR:
            throw Failure(.load, path: url.path, reason: "it is a directory, not a todo file")
        default:
            let reason = "it is not a regular file (a device or a pipe), not a todo file"
            throw Failure(.load, path: url.path, reason: reason)
        }
        guard status.st_size <= Self.maximumFileSize else {
            throw Failure(
                .load,
                path: url.path,
                reason: "it holds \(status.st_size) bytes, more than the \(Self.maximumFileSize >> 20) MiB a todo "
                    + "file may hold"
            )
        }
        guard status.st_size > 0 else { throw Failure(.load, path: url.path, reason: "it is empty, not a todo file") }
        let data = try contents(expecting: Int(status.st_size))
        let file: File
        do {
            file = try JSONDecoder().decode(File.self, from: data)
        } catch {
            throw Failure(.load, path: url.path, reason: "it is not a valid todo file (\(describe(error)))")
        }
        guard file.version == 1 else {
            throw Failure(
                .load,
                path: url.path,
                reason: "it has format version \(file.version); this program reads version 1"
            )
        }
        return file.items
    }

    /// Why the list cannot be saved at all now, found without trying.
    ///
    /// A part of the file's directory path is a file. `nil` when nothing stands in the way (a save
    /// may still fail).
    ///
    /// - Returns: The failure a save would meet, naming the file in the way.
    public func saveProblem() -> Failure? {
        let directory = url.resolvingSymlinksInPath().deletingLastPathComponent().path
        return Self.fileInTheWay(of: directory).map {
            Failure(.save, path: url.path, reason: "\($0) is a file, not a directory")
        }
    }

    /// The file's bytes, which `stat` said are `size`.
    private func contents(expecting size: Int) throws(Failure) -> Data {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw Failure(.load, path: url.path, reason: Self.describe(errno: errno))
        }
        defer { close(descriptor) }
        // One byte more than expected, to notice a file that grew.
        var data = Data(count: size + 1)
        var count = 0
        while count < data.count {
            let result = data.withUnsafeMutableBytes { read(descriptor, $0.baseAddress! + count, $0.count - count) }
            if result < 0 {
                if errno == EINTR { continue }
                throw Failure(.load, path: url.path, reason: Self.describe(errno: errno))
            }
            if result == 0 { break }
            count += result
        }
        guard count == size else {
            throw Failure(
                .load,
                path: url.path,
                reason: "it changed while it was read (\(size) bytes, then \(count)); try again"
            )
        }
        return data.prefix(count)
    }

    /// Writes the items to a temporary file next to the file, flushes it to the disk, then renames
    /// it over the file.
    ///
    /// Missing directories are created. A symbolic link to the file is followed, so the link stays.
    /// An existing file keeps its permissions.
    ///
    /// - Parameter items: The items to keep.
    /// - Throws: ``Failure`` naming the reason when the directory cannot be created or the file
    ///   cannot be written, for example because a component of the path is a file, not a
    ///   directory, or the directory is not writable. The file is then left as it was.
    public func save(_ items: [TodoItem]) throws(Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        var data: Data
        do {
            data = try encoder.encode(File(version: 1, items: items))
        } catch {
            throw Failure(.save, path: url.path, reason: "the list cannot be encoded (\(error))")
        }
        data.append(0x0A)
        let target = url.resolvingSymlinksInPath()
        let directory = target.deletingLastPathComponent().path
        try makeDirectory(directory)
        var status = stat()
        var mode: mode_t = 0o644
        if stat(target.path, &status) == 0 {
            guard (status.st_mode & S_IFMT) == S_IFREG else {
                let kind = (status.st_mode & S_IFMT) == S_IFDIR ? "a directory" : "not a regular file"
                throw Failure(.save, path: url.path, reason: "it is \(kind)")
            }
            guard access(target.path, W_OK) == 0 else {
                throw Failure(.save, path: url.path, reason: "the file is read-only (\(Self.describe(errno: errno)))")
            }
            mode = status.st_mode & 0o7777
        }
        let temporary = directory + "/.\(target.lastPathComponent).\(getpid()).tmp"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw Failure(
                .save,
                path: url.path,
                reason: "cannot create a file in \(directory) (\(Self.describe(errno: errno)))"
            )
        }
        var failure: String?
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = "cannot write to \(directory) (\(Self.describe(errno: errno)))"
                    return
                }
                offset += written
            }
        }
        if failure == nil, fsync(descriptor) != 0 {
            failure = "cannot flush the file to the disk (\(Self.describe(errno: errno)))"
        }
        if close(descriptor) != 0, failure == nil {
            failure = "cannot write to \(directory) (\(Self.describe(errno: errno)))"
        }
        if failure == nil, rename(temporary, target.path) != 0 {
            failure = "cannot replace the file (\(Self.describe(errno: errno)))"
        }
        if let failure {
            unlink(temporary)
            throw Failure(.save, path: url.path, reason: failure)
        }
        // Make the rename itself durable.
        let directoryDescriptor = open(directory, O_RDONLY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            _ = fsync(directoryDescriptor)
            close(directoryDescriptor)
        }
    }

    /// Creates `directory` and its missing parents, with a reason a person understands when that
    /// fails.
    private func makeDirectory(_ directory: String) throws(Failure) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue {
            return
        }
        // Foundation reports a file in the way as "a file with the same name already exists";
        // name the file instead.
        if let blocker = Self.fileInTheWay(of: directory) {
            throw Failure(.save, path: url.path, reason: "\(blocker) is a file, not a directory")
        }
        var path = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            path += "/" + component
            if mkdir(path, 0o755) != 0 && errno != EEXIST {
                throw Failure(
                    .save,
                    path: url.path,
                    reason: "cannot create the directory \(path) (\(Self.describe(errno: errno)))"
                )
            }
        }
    }

    /// The first component of `directory` that exists and is not a directory, if any.
    private static func fileInTheWay(of directory: String) -> String? {
        var path = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            path += "/" + component
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return nil }
            if !isDirectory.boolValue { return path }
        }
        return nil
    }

    /// The system's words for `errno`, starting with a lowercase letter: `permission denied`.
    private static func describe(errno number: Int32) -> String {
        let text = String(cString: strerror(number))
        return text.prefix(1).lowercased() + text.dropFirst()
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
