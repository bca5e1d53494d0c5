import Foundation

/// The page: the HTML of Page/Assets with the style sheet, the script and the run's data put in.
///
/// The template's placeholders (`{{POLICY}}`, `{{STYLE}}`, `{{DATA}}`, `{{SCRIPT}}`) are found once,
/// in the template alone; the data is put in last and never searched, so nothing in it can reach
/// another placeholder. The Content-Security-Policy allows the page's own script and style sheet by
/// their SHA-256 digests and nothing else: no request of any kind (`default-src 'none'`, no form,
/// no base), images only as `data:` (the empty icon, which keeps the browser from asking for one).
enum PageDocument {
    /// The template cut at its placeholders, in order.
    private static let pieces: [String] = {
        var pieces: [String] = []
        var rest = Substring(PageAssets.html)
        for placeholder in ["{{POLICY}}", "{{STYLE}}", "{{DATA}}", "{{SCRIPT}}"] {
            guard let range = rest.range(of: placeholder) else {
                preconditionFailure("DispatchStoreInspector: inspector.html lacks \(placeholder)")
            }
            pieces.append(String(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        pieces.append(String(rest))
        return pieces
    }()

    /// The Content-Security-Policy of every page.
    static let policy =
        "default-src 'none'; script-src 'sha256-\(SHA256.base64Digest(of: PageAssets.script))'; "
        + "style-src 'sha256-\(SHA256.base64Digest(of: PageAssets.style))'; img-src data:; "
        + "base-uri 'none'; form-action 'none'"

    /// The whole page around `data`, the JSON that ``PageData`` wrote.
    static func html(data: [UInt8]) -> [UInt8] {
        var page: [UInt8] = []
        page.reserveCapacity(data.count + PageAssets.script.utf8.count + PageAssets.style.utf8.count + 4_096)
        page.append(contentsOf: pieces[0].utf8)
        page.append(contentsOf: policy.utf8)
        page.append(contentsOf: pieces[1].utf8)
        page.append(contentsOf: PageAssets.style.utf8)
        page.append(contentsOf: pieces[2].utf8)
        page.append(contentsOf: data)
        page.append(contentsOf: pieces[3].utf8)
        page.append(contentsOf: PageAssets.script.utf8)
        page.append(contentsOf: pieces[4].utf8)
        return page
    }
}
