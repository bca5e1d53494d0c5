/// Trees of values that are not `Encodable`, made with `Mirror`: a struct's or a class's fields, an
/// enum's case and payload, a collection's elements, and `String(reflecting:)` for what has no
/// parts.
///
/// The page marks such states as reflected: they show the value's structure as Swift sees it, which
/// may hold more (or less) than the type would encode.
enum Reflection {
    /// The deepest a tree goes; deeper values are shown by their description.
    static let maximumDepth = 48
    /// The most members a container shows; the rest are summed up in one member.
    static let maximumMembers = 100_000

    /// The tree of `value`.
    static func tree(of value: Any) -> InspectedValue {
        var visiting: Set<ObjectIdentifier> = []
        return tree(of: value, depth: 0, visiting: &visiting)
    }

    private static func tree(of value: Any, depth: Int, visiting: inout Set<ObjectIdentifier>) -> InspectedValue {
        if let scalar = scalar(value) { return scalar }
        let mirror = Mirror(reflecting: value)
        guard depth < maximumDepth else { return .text(String(reflecting: value)) }
        var object: ObjectIdentifier?
        if mirror.displayStyle == .class {
            let identifier = ObjectIdentifier(value as AnyObject)
            guard visiting.insert(identifier).inserted else {
                return .text("<cycle: \(String(reflecting: type(of: value)))>")
            }
            object = identifier
        }
        defer {
            if let object { visiting.remove(object) }
        }
        func child(_ value: Any) -> InspectedValue {
            tree(of: value, depth: depth + 1, visiting: &visiting)
        }
        switch mirror.displayStyle {
        case .optional:
            guard let wrapped = mirror.children.first?.value else { return .null }
            return child(wrapped)
        case .collection:
            return .node(
                InspectedNode(
                    kind: .array,
                    keys: [],
                    values: mirror.children.prefix(maximumMembers).map { child($0.value) }
                )
            )
        case .set:
            var keys: [String] = []
            var values: [InspectedValue] = []
            for member in mirror.children.prefix(maximumMembers) {
                let tree = child(member.value)
                keys.append(keyText(tree))
                values.append(tree)
            }
            return .node(InspectedNode(kind: .set, keys: keys, values: values))
        case .dictionary:
            var keys: [String] = []
            var values: [InspectedValue] = []
            for entry in mirror.children.prefix(maximumMembers) {
                let pair = Array(Mirror(reflecting: entry.value).children)
                guard pair.count == 2 else { continue }
                keys.append(keyText(child(pair[0].value)))
                values.append(child(pair[1].value))
            }
            return .node(InspectedNode(kind: .dictionary, keys: keys, values: values))
        case .enum:
            let name = caseName(of: value, mirror: mirror)
            guard let payload = mirror.children.first else { return .string(name) }
            return .node(InspectedNode(kind: .object, keys: [name], values: [child(payload.value)]))
        case .struct, .class, .tuple:
            var keys: [String] = []
            var values: [InspectedValue] = []
            for (index, field) in mirror.children.prefix(maximumMembers).enumerated() {
                keys.append(field.label.map { $0.hasPrefix(".") ? String($0.dropFirst()) : $0 } ?? String(index))
                values.append(child(field.value))
            }
            if keys.isEmpty { return .text(String(reflecting: value)) }
            return .node(InspectedNode(kind: .object, keys: keys, values: values))
        default:
            return .text(String(reflecting: value))
        }
    }

    private static func scalar(_ value: Any) -> InspectedValue? {
        switch value {
        case let value as String: .string(value)
        case let value as Bool: .bool(value)
        case let value as Int: .integer(Int64(value))
        case let value as Int64: .integer(value)
        case let value as Int32: .integer(Int64(value))
        case let value as UInt64: .unsigned(value)
        case let value as UInt: .unsigned(UInt64(value))
        case let value as Double: .double(value)
        case let value as Float: .double(Double(value))
        case let value as Substring: .string(String(value))
        case let value as Character: .string(String(value))
        default: nil
        }
    }

    /// An enum case's name: the payload's label, or the value's description for a case without one.
    private static func caseName(of value: Any, mirror: Mirror) -> String {
        if let label = mirror.children.first?.label { return label }
        let text = String(describing: value)
        return text.firstIndex(of: "(").map { String(text[..<$0]) } ?? text
    }

    private static func keyText(_ tree: InspectedValue) -> String {
        switch tree {
        case .string(let text), .text(let text): text
        default: PageJSON.text(of: tree)
        }
    }
}
