// What the browser tests share: a browser per test, pages opened and checked for requests and
// console errors, the demos' pages, and the canonical text of a state as the page computes it.

import BrowserDriver
import DispatchStore
import Foundation
import TestSupport
import Testing

@testable import DispatchStoreInspector

/// Whether the browser tests must run: set in CI, where a skip is a failure.
let chromiumRequired = ProcessInfo.processInfo.environment["DISPATCHSTORE_REQUIRE_CHROMIUM"] == "1"

/// A browser with one page open on `path` (a fragment may follow), its first rows drawn.
struct OpenPage {
    let browser: HeadlessBrowser
    let page: BrowserPage
    let url: String

    init(_ path: String, fragment: String = "") throws {
        browser = try HeadlessBrowser()
        page = try browser.newPage()
        url = URL(fileURLWithPath: path).absoluteString
        try page.navigate(to: url + fragment)
        guard try page.waitUntil("document.body.dataset.ready === 'rows'") else {
            throw HeadlessBrowser.Failure("the page drew no rows: \(page.problems)")
        }
    }

    /// The page asked for nothing but itself, and its console shows no error or warning.
    func expectQuiet(sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(
            page.requests.allSatisfy { $0.hasPrefix(url) },
            "requests: \(page.requests)",
            sourceLocation: sourceLocation
        )
        #expect(page.problems.isEmpty, "console: \(page.problems)", sourceLocation: sourceLocation)
    }

    func text(_ selector: String) throws -> String {
        try page.string("(document.querySelector(\(jsString(selector))) || {}).textContent || ''")
    }

    func texts(_ selector: String) throws -> [String] {
        try page.evaluate("Array.from(document.querySelectorAll(\(jsString(selector)))).map(e => e.textContent)")
            as? [String]
            ?? []
    }

    func close() {
        browser.close()
    }
}

/// `text` as a JavaScript string literal.
func jsString(_ text: String) -> String {
    String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast()
        .description
}

/// Runs a demo program and fails the test when it does not exit with `status`.
func runDemo(_ name: String, _ arguments: [String], input: String = "", status: Int32 = 0) async throws {
    let output = try await offThePool { try Executables.run(name, arguments, input: Data(input.utf8)) }
    #expect(output.status == status, "\(name) \(arguments): \(output.standardError.suffix(2_000))")
}

// MARK: Inventory events

/// Inventory events, one JSON line each.
enum Events {
    static func restock(_ item: String, _ quantity: Int) -> String {
        #"{"event":"restock","item":"\#(item)","quantity":\#(quantity)}"#
    }

    static func order(_ id: String, _ item: String, _ quantity: Int) -> String {
        #"{"event":"order","id":"\#(id)","item":"\#(item)","quantity":\#(quantity)}"#
    }

    static func cancel(_ id: String) -> String {
        #"{"event":"cancel","id":"\#(id)"}"#
    }

    /// The events the tests know by heart, then `filler` more restocks and orders.
    static func script(filler: Int = 0) -> [String] {
        var events = [
            restock("apple", 10), order("o-1", "apple", 3), order("o-2", "pear", 1), restock("pear", 4),
            order("o-3", "pear", 2), cancel("o-1"), cancel("o-9"),
        ]
        for index in 0..<filler {
            events.append(index % 2 == 0 ? restock("fig", 1 + index % 5) : order("f-\(index)", "fig", 1))
        }
        return events
    }
}

// MARK: Canonical text

/// The canonical JSON of a value's tree, as the page's `inspector.stateText` writes it: members of
/// dictionaries and sets sorted by key (UTF-16), fields in declaration order.
func canonicalText(of state: any StateType) throws -> String {
    let tree: InspectedValue
    if let encodable = state as? any Encodable {
        tree = try TreeEncoding.tree(of: encodable)
    } else {
        tree = Reflection.tree(of: state)
    }
    return canonical(tree)
}

private func canonical(_ value: InspectedValue) -> String {
    switch value {
    case .null: return "null"
    case .bool(let flag): return flag ? "true" : "false"
    case .integer(let number): return abs(number) <= 1 << 53 ? String(number) : #"{"$n":"\#(number)"}"#
    case .unsigned(let number): return number <= 1 << 53 ? String(number) : #"{"$n":"\#(number)"}"#
    case .double(let number):
        return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : "\(number)"
    case .string(let text): return quoted(text)
    case .text(let text): return #"{"$t":\#(quoted(text))}"#
    case .node(let node):
        var order = Array(node.values.indices)
        if node.kind == .dictionary || node.kind == .set {
            order.sort { node.keys[$0].utf16.lexicographicallyPrecedes(node.keys[$1].utf16) }
        }
        switch node.kind {
        case .array: return "[" + node.values.map(canonical).joined(separator: ",") + "]"
        case .set: return #"{"$set":["# + order.map { quoted(node.keys[$0]) }.joined(separator: ",") + "]}"
        case .object, .dictionary:
            return "{" + order.map { quoted(node.keys[$0]) + ":" + canonical(node.values[$0]) }.joined(separator: ",")
                + "}"
        }
    }
}

/// `text` as `JSON.stringify` writes it.
private func quoted(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": result += "\\\""
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case "\u{8}": result += "\\b"
        case "\u{C}": result += "\\f"
        case _ where scalar.value < 0x20:
            let hex = String(scalar.value, radix: 16)
            result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        default: result.unicodeScalars.append(scalar)
        }
    }
    return result + "\""
}
