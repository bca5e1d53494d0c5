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
        let names = try Regex(#"`([A-Za-z+/]+\.swift)`"#)
        return (section, section.matches(of: names).map { String($0.output[1].substring ?? "") })
    }

    @Test("every source file the walk through one dispatch names exists, under Sources/DispatchStore")
    func namedFilesExist() throws {
        let files = try Self.walk().files
        #expect(files.count >= 20, "the walk names the files it goes through")
        for file in files {
            #expect(
                FileManager.default.fileExists(atPath: repositoryFile("Sources/DispatchStore/\(file)").path),
                "Docs/Architecture.md names \(file), which is not in Sources/DispatchStore"
            )
        }
    }

    @Test("the walk names every file under Sources/DispatchStore/Engine")
    func everyEngineFileIsNamed() throws {
        let named = Set(try Self.walk().files)
        let engine = repositoryFile("Sources/DispatchStore/Engine")
        let files = try FileManager.default.contentsOfDirectory(atPath: engine.path).filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for file in files {
            #expect(named.contains("Engine/\(file)"), "Docs/Architecture.md does not name Engine/\(file)")
        }
    }

    @Test("the walk covers every exit of Engine.dispatch")
    func everyExitIsCovered() throws {
        let text = try Self.walk().text
        for exit in [
            "after `shutdown`", "| `.sync` |", "`.sync` from `perform`", "| `.serial` |", "| `.async` |",
            "`.mainThread`, from another thread", "`.mainThread`, on the main queue",
        ] {
            #expect(text.contains(exit), "Docs/Architecture.md's table of exits lacks \(exit)")
        }
    }
}
