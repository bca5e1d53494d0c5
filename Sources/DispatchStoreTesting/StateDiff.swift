/// Field-level differences between two values, found by walking their `Mirror`s.
///
/// Values of an `Equatable` type are compared with `==` first (so a custom `==` decides); others,
/// and the children of unequal values, field by field: structs, classes and tuples by label, arrays
/// and other collections by index, dictionaries by key, sets by element, optionals and enum payloads
/// transparently. Leaves without children compare by `==` when `Equatable`, by description
/// otherwise.
enum StateDiff {
    /// How deep the walk goes before comparing descriptions (guards against reference cycles).
    static let maximumDepth = 40

    /// Whether `lhs` and `rhs` are equal: `==` when their type is `Equatable`, no field difference
    /// otherwise.
    static func areEqual(_ lhs: Any, _ rhs: Any) -> Bool {
        if let equal = equalIfEquatable(lhs, rhs) { return equal }
        return differences(lhs, rhs).isEmpty
    }

    /// The differences between `lhs` and `rhs`, in field order.
    static func differences(_ lhs: Any, _ rhs: Any) -> [Difference] {
        var found: [Difference] = []
        walk(lhs, rhs, path: "", depth: 0, into: &found)
        return found
    }

    /// The differences as lines such as `  items[0].title: "milk" → "bread"`, one per field, at
    /// most `limit` of them.
    static func render(
        _ differences: [Difference],
        lhs lhsName: String,
        rhs rhsName: String,
        limit: Int = 50
    ) -> String {
        var lines = differences.prefix(limit).map { difference in
            let path = difference.path.isEmpty ? "(the whole state)" : difference.path
            return "  \(path): \(lhsName) \(difference.lhs), \(rhsName) \(difference.rhs)"
        }
        if differences.count > limit {
            lines.append("  … and \(differences.count - limit) more")
        }
        return lines.joined(separator: "\n")
    }

    private static func walk(_ lhs: Any, _ rhs: Any, path: String, depth: Int, into found: inout [Difference]) {
        if let equal = equalIfEquatable(lhs, rhs), equal { return }
        let lhsMirror = Mirror(reflecting: lhs)
        let rhsMirror = Mirror(reflecting: rhs)
        guard type(of: lhs) == type(of: rhs), depth < maximumDepth else {
            addLeaf(lhs, rhs, path: path, into: &found)
            return
        }
        switch lhsMirror.displayStyle {
        case .optional:
            switch (lhsMirror.children.first?.value, rhsMirror.children.first?.value) {
            case (let lhsValue?, let rhsValue?): walk(lhsValue, rhsValue, path: path, depth: depth + 1, into: &found)
            case (nil, nil): break
            default: addLeaf(lhs, rhs, path: path, into: &found)
            }
        case .collection:
            walkCollection(lhsMirror, rhsMirror, path: path, depth: depth, into: &found)
        case .dictionary:
            walkDictionary(lhsMirror, rhsMirror, path: path, depth: depth, into: &found)
        case .set:
            walkSet(lhsMirror, rhsMirror, path: path, into: &found)
        case .enum:
            let lhsCase = lhsMirror.children.first
            let rhsCase = rhsMirror.children.first
            if let lhsCase, let rhsCase, let label = lhsCase.label, label == rhsCase.label {
                walk(lhsCase.value, rhsCase.value, path: join(path, label), depth: depth + 1, into: &found)
            } else {
                addLeaf(lhs, rhs, path: path, into: &found)
            }
        case .struct, .class, .tuple:
            let lhsChildren = Array(lhsMirror.children)
            let rhsChildren = Array(rhsMirror.children)
            guard !lhsChildren.isEmpty, lhsChildren.count == rhsChildren.count else {
                addLeaf(lhs, rhs, path: path, into: &found)
                return
            }
            let before = found.count
            for (index, (lhsChild, rhsChild)) in zip(lhsChildren, rhsChildren).enumerated() {
                let label = lhsChild.label ?? "\(index)"
                walk(lhsChild.value, rhsChild.value, path: join(path, label), depth: depth + 1, into: &found)
            }
            // Unequal by `==` with no field telling why (a custom `==`): show the values.
            if found.count == before, equalIfEquatable(lhs, rhs) == false {
                addLeaf(lhs, rhs, path: path, into: &found)
            }
        default:
            addLeaf(lhs, rhs, path: path, into: &found)
        }
    }

    private static func walkCollection(
        _ lhs: Mirror,
        _ rhs: Mirror,
        path: String,
        depth: Int,
        into found: inout [Difference]
    ) {
        let lhsElements = lhs.children.map(\.value)
        let rhsElements = rhs.children.map(\.value)
        for index in 0..<max(lhsElements.count, rhsElements.count) {
            let elementPath = "\(path)[\(index)]"
            switch (index < lhsElements.count, index < rhsElements.count) {
            case (true, true):
                walk(lhsElements[index], rhsElements[index], path: elementPath, depth: depth + 1, into: &found)
            case (true, false):
                found.append(Difference(path: elementPath, lhs: render(lhsElements[index]), rhs: "(none)"))
            default:
                found.append(Difference(path: elementPath, lhs: "(none)", rhs: render(rhsElements[index])))
            }
        }
    }

    private static func walkDictionary(
        _ lhs: Mirror,
        _ rhs: Mirror,
        path: String,
        depth: Int,
        into found: inout [Difference]
    ) {
        let lhsPairs = keyedValues(lhs)
        let rhsPairs = keyedValues(rhs)
        let keys = Set(lhsPairs.keys).union(rhsPairs.keys).sorted()
        for key in keys {
            let entryPath = "\(path)[\(key)]"
            switch (lhsPairs[key], rhsPairs[key]) {
            case (let lhsValue?, let rhsValue?):
                walk(lhsValue, rhsValue, path: entryPath, depth: depth + 1, into: &found)
            case (let lhsValue?, nil):
                found.append(Difference(path: entryPath, lhs: render(lhsValue), rhs: "(none)"))
            case (nil, let rhsValue?):
                found.append(Difference(path: entryPath, lhs: "(none)", rhs: render(rhsValue)))
            case (nil, nil):
                break
            }
        }
    }

    /// A dictionary's values by the rendering of their keys (a mirror lists them in hash order).
    private static func keyedValues(_ mirror: Mirror) -> [String: Any] {
        var values: [String: Any] = [:]
        for child in mirror.children {
            let pair = Array(Mirror(reflecting: child.value).children)
            guard pair.count == 2 else { continue }
            values[render(pair[0].value)] = pair[1].value
        }
        return values
    }

    private static func walkSet(_ lhs: Mirror, _ rhs: Mirror, path: String, into found: inout [Difference]) {
        let lhsElements = Set(lhs.children.map { render($0.value) })
        let rhsElements = Set(rhs.children.map { render($0.value) })
        // A set has no positions: each element found on one side only is a difference of the set.
        for element in lhsElements.subtracting(rhsElements).sorted() {
            found.append(Difference(path: path, lhs: element, rhs: "(none)"))
        }
        for element in rhsElements.subtracting(lhsElements).sorted() {
            found.append(Difference(path: path, lhs: "(none)", rhs: element))
        }
    }

    private static func addLeaf(_ lhs: Any, _ rhs: Any, path: String, into found: inout [Difference]) {
        let lhsText = render(lhs)
        let rhsText = render(rhs)
        if lhsText == rhsText, type(of: lhs) != type(of: rhs) {
            found.append(
                Difference(path: path, lhs: "\(lhsText) (\(type(of: lhs)))", rhs: "\(rhsText) (\(type(of: rhs)))")
            )
        } else if lhsText != rhsText || equalIfEquatable(lhs, rhs) == false {
            found.append(Difference(path: path, lhs: lhsText, rhs: rhsText))
        }
    }

    private static func join(_ path: String, _ label: String) -> String {
        path.isEmpty ? label : "\(path).\(label)"
    }

    /// A value as a test reads it: strings quoted, optionals unwrapped, other values described.
    static func render(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return "nil" }
            return render(wrapped)
        }
        switch value {
        case let string as String: return String(reflecting: string)
        case let substring as Substring: return String(reflecting: String(substring))
        case let character as Character: return String(reflecting: character)
        default: return String(describing: value)
        }
    }

    /// `lhs == rhs` when `lhs`'s type is `Equatable` (`false` when `rhs` has another type); `nil`
    /// when it is not `Equatable`.
    static func equalIfEquatable(_ lhs: Any, _ rhs: Any) -> Bool? {
        guard let lhs = lhs as? any Equatable else { return nil }
        return lhs.isEqual(toAny: rhs)
    }
}

extension Equatable {
    /// Whether `other` is a `Self` equal to this value.
    fileprivate func isEqual(toAny other: Any) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }
}
