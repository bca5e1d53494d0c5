// Reads a page back: its embedded data, parsed, and every store's state after every row rebuilt
// from the frames and the changes, as the page's script does, so that the tests can compare them
// with the states the program had.

import Foundation
import TestSupport

@testable import DispatchStoreInspector

struct PageReader {
    /// The page, read by the helper the other test targets use.
    let page: InspectorPage

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    init(_ bytes: Data) throws {
        page = try InspectorPage(html: String(decoding: bytes, as: UTF8.self))
    }

    /// The page's HTML.
    var html: String { page.html }
    /// The embedded data, parsed.
    var data: [String: Any] { page.data }

    /// The text of the data element, as the page holds it.
    var dataText: Substring {
        let opening = "<script id=\"inspector-data\" type=\"application/json\">"
        let start = html.range(of: opening)!
        let end = html.range(of: "</script>", range: start.upperBound..<html.endIndex)!
        return html[start.upperBound..<end.lowerBound]
    }

    var rows: [[Any]] { page.rows }
    var storeIdentifiers: [String] { (data["stores"] as? [[String: Any]] ?? []).map { $0["id"] as? String ?? "" } }
    var keys: [String] { data["keys"] as? [String] ?? [] }
    var paths: [[Any]] { data["paths"] as? [[Any]] ?? [] }
    var types: [String] { data["types"] as? [String] ?? [] }
    var problems: [[String: Any]] { data["problems"] as? [[String: Any]] ?? [] }
    var transactionIDs: [UInt64] { page.transactionIDs }
    var transactionExtras: [[String: Any]] { page.transactionExtras }

    // MARK: Trees

    /// A tree in the page's tagged form, as a value.
    func tree(_ raw: Any) throws -> InspectedValue {
        if raw is NSNull { return .null }
        if let text = raw as? String { return .string(text) }
        if let number = raw as? NSNumber {
            switch String(cString: number.objCType) {
            case "c": return .bool(number.boolValue)
            case "d", "f": return .double(number.doubleValue)
            default: return number.int64Value < 0 ? .integer(number.int64Value) : .integer(Int64(number.uint64Value))
            }
        }
        guard let array = raw as? [Any], let tag = array.first as? String else {
            throw Failure(description: "not a tree: \(raw)")
        }
        let rest = Array(array.dropFirst())
        switch tag {
        case "t": return .text(rest[0] as! String)
        case "n": return .text("number " + (rest[0] as! String))
        case "a": return .node(InspectedNode(kind: .array, keys: [], values: try rest.map(tree)))
        case "S":
            let members = rest.map { $0 as! String }
            return .node(InspectedNode(kind: .set, keys: members, values: members.map(InspectedValue.string)))
        case "o", "d", "s":
            var names: [String] = []
            var values: [InspectedValue] = []
            for index in stride(from: 0, to: rest.count, by: 2) {
                names.append((rest[index] as? String) ?? keys[(rest[index] as! NSNumber).intValue])
                values.append(try tree(rest[index + 1]))
            }
            let kind: InspectedNode.Kind = tag == "o" ? .object : tag == "d" ? .dictionary : .set
            return .node(InspectedNode(kind: kind, keys: names, values: values))
        default:
            throw Failure(description: "unknown tag \(tag)")
        }
    }

    func changes(_ raw: Any) throws -> [TreeChange] {
        try (raw as! [Any]).map { item in
            let change = item as! [Any]
            let code = (change[0] as! NSNumber).intValue
            if code == 3 { return .replace(try tree(change[1])) }
            let path = paths[(change[1] as! NSNumber).intValue].map(segment)
            switch code {
            case 0: return .set(container: path, member: segment(change[2]), value: try tree(change[3]))
            case 1: return .remove(container: path, member: segment(change[2]))
            default:
                return .splice(
                    container: path,
                    index: (change[2] as! NSNumber).intValue,
                    deleteCount: (change[3] as! NSNumber).intValue,
                    values: try (change[4] as! [Any]).map(tree)
                )
            }
        }
    }

    private func segment(_ raw: Any) -> PathSegment {
        if let key = raw as? String { return .key(key) }
        let number = (raw as! NSNumber).intValue
        return number < 0 ? .field(keys[-1 - number]) : .index(number)
    }

    /// Every store's state after every row (`states[row][store]`), rebuilt from the frames and the
    /// changes as the page does.
    func rebuiltStates() throws -> [[InspectedValue?]] {
        let frames = data["frames"] as? [[Any]] ?? []
        var current: [InspectedValue?] = Array(repeating: nil, count: storeIdentifiers.count)
        var byPosition: [Int: [(Int, InspectedValue, [TreeChange])]] = [:]
        for frame in frames {
            let store = (frame[0] as! NSNumber).intValue
            let position = (frame[1] as! NSNumber).intValue
            var hidden: [TreeChange] = []
            if let lists = frame[3] as? [Any] {
                for list in lists { hidden += try changes(list) }
            }
            byPosition[position, default: []].append((store, try tree(frame[2]), hidden))
        }
        var states: [[InspectedValue?]] = []
        for (index, row) in rows.enumerated() {
            for (store, start, hidden) in byPosition[index] ?? [] where current[store] == nil {
                current[store] = try start.applying(hidden).unwrap("the hidden changes of store \(store)")
            }
            let code = (row[0] as! NSNumber).intValue
            let list: [Any] =
                code == 0 ? row[8] as! [Any] : code == 2 ? row[7] as! [Any] : code == 3 ? row[3] as! [Any] : []
            for position in stride(from: 0, to: list.count, by: 2) {
                let store = (list[position] as! NSNumber).intValue
                current[store] = try current[store]?.applying(try changes(list[position + 1]))
                    .unwrap("the changes of row \(index) to store \(store)")
            }
            states.append(current)
        }
        return states
    }
}

extension Optional {
    func unwrap(_ what: String) throws -> Wrapped {
        guard let self else { throw PageReader.Failure(description: "\(what) do not apply") }
        return self
    }
}

/// A value's tree as the page holds it, for comparing with a rebuilt one: scalars the page writes as
/// JSON numbers come back as integers or doubles.
func pageTree<Value: Encodable>(of value: Value) throws -> InspectedValue {
    var writer = PageJSON()
    writer.write(try TreeEncoding.tree(of: value))
    let reader = PageReader.Keyless(keys: writer.keyTable)
    return try reader.tree(JSONSerialization.jsonObject(with: Data(writer.bytes), options: [.fragmentsAllowed]))
}

extension PageReader {
    /// A reader of lone trees written with `keys` as their key table.
    struct Keyless {
        let keys: [String]

        func tree(_ raw: Any) throws -> InspectedValue {
            let page: [String: Any] = ["keys": keys, "rows": [], "stores": []]
            let text = String(decoding: try JSONSerialization.data(withJSONObject: page), as: UTF8.self)
            let html = "<script id=\"inspector-data\" type=\"application/json\">\(text)</script>"
            return try PageReader(Data(html.utf8)).tree(raw)
        }
    }
}
