public import Foundation

/// A fresh directory under the system's temporary directory, removed by `remove()`.
public struct TemporaryDirectory: Sendable {
    /// The directory.
    public let url: URL

    /// Creates the directory.
    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("dispatchstore-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path in the directory.
    public func file(_ name: String) -> URL {
        url.appendingPathComponent(name)
    }

    /// Removes the directory and what it holds.
    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}

/// A file of this repository, by its path from the repository's root (`"Docs/Architecture.md"`).
public func repositoryFile(_ path: String) -> URL {
    // This file is Tests/TestSupport/Files.swift.
    URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent(path)
}
