import Foundation
import TestSupport
import Testing

@Suite("Docs/Architecture.md")
struct ArchitectureDocTests {
    @Test("every source file the walk through one dispatch names exists, under Sources/DispatchStore")
    func namedFilesExist() throws {
        let text = try String(contentsOf: repositoryFile("Docs/Architecture.md"), encoding: .utf8)
        let walk = try #require(text.components(separatedBy: "## One dispatch, file by file").dropFirst().first)
        let section = try #require(walk.components(separatedBy: "\n## ").first)
        let names = try Regex(#"`([A-Za-z+/]+\.swift)`"#)
        let files = section.matches(of: names).map { String($0.output[1].substring ?? "") }
        #expect(files.count >= 20, "the walk names the files it goes through")
        for file in files {
            #expect(
                FileManager.default.fileExists(atPath: repositoryFile("Sources/DispatchStore/\(file)").path),
                "Docs/Architecture.md names \(file), which is not in Sources/DispatchStore"
            )
        }
    }
}
