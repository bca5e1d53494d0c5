import Foundation
import TestSupport
import Testing

@Suite("Docs/Architecture.md")
struct ArchitectureDocTests {
    /// The section that walks through one dispatch, and the source files it names.
    private static func walk() throws -> (text: String, files: [String]) {
        let text = try String(contentsOf: repositoryFile("Docs/Architecture.md"), encoding: .utf8)
        let walk = try #require(text.components(separatedBy: "## One dispatch, file by file").dropFirst().first)
        let section = try #require(walk.components(separatedBy: "\n## ").first)
        return (section, files(in: section))
    }

    /// The source files `text` names, as `Folder/File.swift`.
    private static func files(in text: String) -> [String] {
        let names = try! Regex(#"`([A-Za-z+/]+\.swift)`"#)
        return text.matches(of: names).map { String($0.output[1].substring ?? "") }
    }

    /// The walks through a `.sync` and an `.async` dispatch: from the shortcut to the observers.
    private static func paths() throws -> String {
        let text = try walk().text
        let start = try #require(text.range(of: "### A `.sync` dispatch nobody reads"))
        let end = try #require(text.range(of: "### Every exit of `Engine.dispatch`"))
        return String(text[start.lowerBound..<end.lowerBound])
    }

    /// Every identifier in a code span of `text` (`TransactionRun.PreparedStep` gives both names).
    private static func namesInCode(_ text: String) -> Set<String> {
        let spans = try! Regex("`([^`]+)`")
        let words = try! Regex("[A-Za-z_][A-Za-z0-9_]*")
        var names: Set<String> = []
        for span in text.matches(of: spans) {
            let code = String(span.output[1].substring ?? "")
            for word in code.matches(of: words) { names.insert(String(code[word.range])) }
        }
        return names
    }

    /// The names of the types declared in `source` (top level or nested), typealiases included.
    private static func declaredTypes(in source: String) -> [String] {
        let declaration = try! Regex(
            #"(?m)^\s*(?:(?:public|package|private|fileprivate|internal|@usableFromInline|final|open|indirect)\s+)*(?:class|struct|enum|protocol|typealias|actor)\s+([A-Za-z_][A-Za-z0-9_]*)"#
        )
        return source.matches(of: declaration).map { String($0.output[1].substring ?? "") }
    }

    /// Every Swift file under Sources/DispatchStore, as `Folder/File.swift`.
    private static func sourceFiles() throws -> [String] {
        let root = repositoryFile("Sources/DispatchStore")
        let enumerator = try #require(FileManager.default.enumerator(atPath: root.path))
        return enumerator.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }.sorted()
    }

    @Test("every source file the walk through one dispatch names exists, under Sources/DispatchStore")
    func namedFilesExist() throws {
        let files = try Self.walk().files
        #expect(files.count >= 60, "the walk names the files it goes through")
        for file in files {
            #expect(
                FileManager.default.fileExists(atPath: repositoryFile("Sources/DispatchStore/\(file)").path),
                "Docs/Architecture.md names \(file), which is not in Sources/DispatchStore"
            )
        }
    }

    @Test("the walk names every file under Sources/DispatchStore, in every folder")
    func everySourceFileIsNamed() throws {
        let named = Set(try Self.walk().files)
        let files = try Self.sourceFiles()
        #expect(files.count > 60)
        for file in files {
            #expect(named.contains(file), "Docs/Architecture.md does not name \(file)")
        }
    }

    @Test("the walks through a .sync and an .async dispatch name every type of every file they go through")
    func everyTypeOnThePathIsNamed() throws {
        let paths = try Self.paths()
        let named = Self.namesInCode(try Self.walk().text)
        let files = Set(Self.files(in: paths))
        #expect(files.count >= 40, "the walks name the files they go through")
        for file in files.sorted() {
            let source = try String(
                contentsOf: repositoryFile("Sources/DispatchStore/\(file)"),
                encoding: .utf8
            )
            for type in Self.declaredTypes(in: source) {
                #expect(named.contains(type), "Docs/Architecture.md goes through \(file) but does not name its \(type)")
            }
        }
    }

    @Test("the walk covers every exit of Engine.dispatch")
    func everyExitIsCovered() throws {
        let text = try Self.walk().text
        for exit in [
            "`.sync` through a shortcut", "after `shutdown`", "| `.sync` |", "`.sync` from `perform`", "| `.serial` |",
            "| `.async` |", "`.mainThread`, from another thread", "`.mainThread`, on the main queue",
        ] {
            #expect(text.contains(exit), "Docs/Architecture.md's table of exits lacks \(exit)")
        }
    }

    @Test("the table of locks names every kind of code a user gives the library")
    func everyUserCallbackHasItsLock() throws {
        let text = try String(contentsOf: repositoryFile("Docs/Architecture.md"), encoding: .utf8)
        let table = try #require(text.components(separatedBy: "## Which lock your code runs under").dropFirst().first)
        for code in [
            "`Reducer.operation(for:in:)`", "`Reducer.reduce(_:into:)`", "`updateState` closure", "`ActionOperation`",
            "observers", "`Middleware` hooks", "completion",
        ] {
            #expect(table.contains(code), "Docs/Architecture.md does not say which lock \(code) runs under")
        }
    }
}
