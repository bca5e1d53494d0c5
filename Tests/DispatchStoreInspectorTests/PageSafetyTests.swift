import DispatchStore
import Foundation
import TestSupport
import Testing

@testable import DispatchStoreInspector

@Suite("The page's safety")
struct PageSafetyTests {
    static let hostile = [
        "</script><script>document.title='owned'</script>", "<img src=x onerror=\"document.title='owned'\">",
        "<!-- not a comment", "]]> & &amp; \"quotes\" 'single'", "line\u{2028}separator\u{2029}and\u{0}nul",
        "{{SCRIPT}}", "https://example.com/tracker.png",
    ]

    @Test("payloads, identifiers and type names that look like markup cannot end the data or become markup")
    func hostileData() throws {
        let dispatcher = Dispatcher()
        let store = Store<Stock, ShopAction>(identifier: "<b>stock</b></script>", reducer: StockReducer())
        try dispatcher.register(store: store)
        let inspector = Inspector(title: "</title><script>alert(1)</script>")
        dispatcher.register(middleware: inspector)
        for text in Self.hostile {
            dispatcher.dispatch(ShopAction.note(text), mode: .sync)
            dispatcher.dispatch(ShopAction.add(item: text, count: 1), mode: .sync)
        }
        let bytes = inspector.makePage()
        let page = try PageReader(bytes)
        // The data's text holds no "<" at all, so it cannot close its element or open another.
        #expect(!page.dataText.contains("<"))
        #expect(!page.dataText.contains(">") && !page.dataText.contains("&"))
        // Exactly the template's elements: two scripts, one style sheet.
        #expect(page.html.components(separatedBy: "<script").count == 3)
        #expect(page.html.components(separatedBy: "</script>").count == 3)
        // The strings come back exactly.
        let rebuiltNotes = try page.rebuiltStates().last?[0]?.node?.child(named: "notes")?.node?.values
        #expect(rebuiltNotes == Self.hostile.map(InspectedValue.string))
        #expect(page.storeIdentifiers == ["<b>stock</b></script>"])
        #expect(page.data["title"] as? String == "</title><script>alert(1)</script>")
    }

    @Test(
        "the page asks for nothing: a policy that forbids requests, allowing its own script and style by digest, and no address"
    )
    func policy() throws {
        let inspector = Inspector()
        let page = String(decoding: inspector.makePage(), as: UTF8.self)
        let script = SHA256.base64Digest(of: PageAssets.script)
        let style = SHA256.base64Digest(of: PageAssets.style)
        let expected =
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-\(script)'; "
            + "style-src 'sha256-\(style)'; img-src data:; base-uri 'none'; form-action 'none'\">"
        #expect(page.contains(expected))
        // The policy comes before anything it governs.
        #expect(page.range(of: expected)!.lowerBound < page.range(of: "<style>")!.lowerBound)
        #expect(page.contains("<script>" + PageAssets.script + "</script>"))
        #expect(page.contains("<style>" + PageAssets.style + "</style>"))
        #expect(!page.contains("://"))
        #expect(!page.contains("innerHTML") && !page.contains("outerHTML") && !page.contains("insertAdjacentHTML"))
        #expect(!page.contains("eval(") && !page.contains("new Function"))
    }

    @Test("SHA-256 gives the standard's test vectors")
    func digest() {
        func hex(_ text: String) -> String {
            SHA256.digest(Array(text.utf8)).map {
                String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16)
            }
            .joined()
        }
        #expect(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            hex(String(repeating: "a", count: 1_000))
                == "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"
        )
        #expect(SHA256.base64([0xFF, 0x00]) == "/wA=" && SHA256.base64([1, 2, 3]) == "AQID")
    }

    @Test("the page's files are compiled in exactly: the generated Swift holds Page/Assets as it is")
    func assets() throws {
        let directory = "Sources/DispatchStoreInspector/Page/Assets/"
        let message = "run python3 \(directory)embed.py after changing the page's files"
        #expect(
            try String(contentsOf: repositoryFile(directory + "inspector.html"), encoding: .utf8) == PageAssets.html,
            "\(message)"
        )
        #expect(
            try String(contentsOf: repositoryFile(directory + "inspector.css"), encoding: .utf8) == PageAssets.style,
            "\(message)"
        )
        #expect(
            try String(contentsOf: repositoryFile(directory + "inspector.js"), encoding: .utf8) == PageAssets.script,
            "\(message)"
        )
    }

    @Test("a page that cannot be written gets an error naming the path and the reason; nothing is left behind")
    func unwritable() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let inspector = Inspector()
        let cases: [(String, String)] = [
            (
                directory.file("missing/page.html").path,
                "No such file or directory (the directory \(directory.file("missing").path) does not exist)"
            ),
            (directory.url.path, "it is a directory"),
            ("/dev/full", "No space left on device"),
        ]
        for (path, reason) in cases {
            #expect(throws: InspectorError.unwritable(path, reason: reason)) { try inspector.writePage(to: path) }
        }
        #expect(throws: InspectorError.unwritable(directory.url.path, reason: "it is a directory")) {
            try Inspector.checkPagePath(directory.url.path)
        }
        let loop = directory.file("loop").path
        try FileManager.default.createSymbolicLink(atPath: loop, withDestinationPath: loop)
        #expect(throws: InspectorError.self) { try inspector.writePage(to: loop) }
        #expect(throws: InspectorError.self) { try Inspector.checkPagePath(loop) }
        let good = directory.file("page.html").path
        try Inspector.checkPagePath(good)
        let written = try inspector.writePage(to: good)
        #expect(written.byteCount == (try FileManager.default.attributesOfItem(atPath: good)[.size] as? Int))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted() == ["loop", "page.html"]
        )
    }
}
