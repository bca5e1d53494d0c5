/// The changes from one tree to the next, found without looking into members the two trees share.
enum TreeDiff {
    /// The changes that turn `old` into `new`.
    static func changes(from old: InspectedValue, to new: InspectedValue) -> [TreeChange] {
        var changes: [TreeChange] = []
        var path: [PathSegment] = []
        if case .node(let before) = old, case .node(let after) = new, before.kind == after.kind {
            compare(before, after, path: &path, into: &changes)
        } else if old != new {
            changes.append(.replace(new))
        }
        return changes
    }

    /// Compares two versions of the member at `path` + `member`.
    private static func compare(
        _ old: InspectedValue,
        _ new: InspectedValue,
        member: PathSegment,
        path: inout [PathSegment],
        into changes: inout [TreeChange]
    ) {
        if old == new { return }
        if case .node(let before) = old, case .node(let after) = new, before.kind == after.kind {
            path.append(member)
            compare(before, after, path: &path, into: &changes)
            path.removeLast()
        } else {
            changes.append(.set(container: path, member: member, value: new))
        }
    }

    private static func compare(
        _ old: InspectedNode,
        _ new: InspectedNode,
        path: inout [PathSegment],
        into changes: inout [TreeChange]
    ) {
        if old === new { return }
        switch new.kind {
        case .array:
            compareArrays(old, new, path: &path, into: &changes)
        case .object, .dictionary, .set:
            compareMembers(old, new, path: &path, into: &changes)
        }
    }

    private static func compareMembers(
        _ old: InspectedNode,
        _ new: InspectedNode,
        path: inout [PathSegment],
        into changes: inout [TreeChange]
    ) {
        // An enum that changed its case: one new value rather than a removal and an addition.
        if new.kind == .object, !path.isEmpty, !old.keys.isEmpty, !new.keys.isEmpty,
            !new.keys.contains(where: { old.position(of: $0) != nil })
        {
            let member = path.removeLast()
            changes.append(.set(container: path, member: member, value: .node(new)))
            path.append(member)
            return
        }
        if let origins = new.origins, new.derivedFrom == ObjectIdentifier(old) {
            compareDerived(old, new, origins: origins, path: &path, into: &changes)
            return
        }
        var found = 0
        for (index, key) in new.keys.enumerated() {
            guard let position = old.position(of: key, hint: index) else {
                changes.append(.set(container: path, member: .member(key, of: new.kind), value: new.values[index]))
                continue
            }
            found += 1
            compare(
                old.values[position],
                new.values[index],
                member: .member(key, of: new.kind),
                path: &path,
                into: &changes
            )
        }
        guard found < old.count else { return }
        for (index, key) in old.keys.enumerated() where new.position(of: key, hint: index) == nil {
            changes.append(.remove(container: path, member: .member(key, of: new.kind)))
        }
    }

    /// Compares a node with the one it was made from, through the positions it recorded.
    private static func compareDerived(
        _ old: InspectedNode,
        _ new: InspectedNode,
        origins: [Int32],
        path: inout [PathSegment],
        into changes: inout [TreeChange]
    ) {
        var kept = 0
        for (index, origin) in origins.enumerated() {
            guard origin >= 0 else {
                changes.append(
                    .set(container: path, member: .member(new.keys[index], of: new.kind), value: new.values[index])
                )
                continue
            }
            kept += 1
            let before = old.values[Int(origin)]
            if before == new.values[index] { continue }
            compare(
                before,
                new.values[index],
                member: .member(new.keys[index], of: new.kind),
                path: &path,
                into: &changes
            )
        }
        guard kept < old.count else { return }
        var present = [Bool](repeating: false, count: old.count)
        for origin in origins where origin >= 0 {
            present[Int(origin)] = true
        }
        for (index, isPresent) in present.enumerated() where !isPresent {
            changes.append(.remove(container: path, member: .member(old.keys[index], of: new.kind)))
        }
    }

    private static func compareArrays(
        _ old: InspectedNode,
        _ new: InspectedNode,
        path: inout [PathSegment],
        into changes: inout [TreeChange]
    ) {
        let before = old.values
        let after = new.values
        if before.count == after.count {
            for index in after.indices {
                compare(before[index], after[index], member: .index(index), path: &path, into: &changes)
            }
            return
        }
        var prefix = 0
        while prefix < before.count, prefix < after.count, same(before[prefix], after[prefix]) {
            prefix += 1
        }
        var suffix = 0
        while suffix < before.count - prefix, suffix < after.count - prefix,
            same(before[before.count - 1 - suffix], after[after.count - 1 - suffix])
        {
            suffix += 1
        }
        changes.append(
            .splice(
                container: path,
                index: prefix,
                deleteCount: before.count - prefix - suffix,
                values: Array(after[prefix..<(after.count - suffix)])
            )
        )
    }

    private static func same(_ left: InspectedValue, _ right: InspectedValue) -> Bool {
        left == right || left.isEquivalent(to: right)
    }
}

extension InspectedValue {
    /// The tree after `changes`: what the page computes, used to check it.
    ///
    /// - Returns: `nil` when a change does not fit the tree (a path that leads nowhere).
    func applying(_ changes: [TreeChange]) -> InspectedValue? {
        var tree = self
        for change in changes {
            switch change {
            case .replace(let value):
                tree = value
            case .set(let container, let member, let value):
                guard let changed = tree.updating(container[...], { $0.setting(member, to: value) }) else { return nil }
                tree = changed
            case .remove(let container, let member):
                guard let changed = tree.updating(container[...], { $0.setting(member, to: nil) }) else { return nil }
                tree = changed
            case .splice(let container, let index, let deleteCount, let values):
                guard
                    let changed = tree.updating(
                        container[...],
                        { node in
                            guard node.kind == .array, index + deleteCount <= node.count else { return nil }
                            var members = node.values
                            members.replaceSubrange(index..<(index + deleteCount), with: values)
                            return InspectedNode(kind: .array, keys: [], values: members)
                        }
                    )
                else { return nil }
                tree = changed
            }
        }
        return tree
    }

    /// The tree with the container at `path` replaced by what `change` makes of it.
    private func updating(
        _ path: ArraySlice<PathSegment>,
        _ change: (InspectedNode) -> InspectedNode?
    ) -> InspectedValue? {
        guard case .node(let node) = self else { return nil }
        guard let first = path.first else { return change(node).map(InspectedValue.node) }
        guard let current = node.member(first),
            let changed = current.updating(path.dropFirst(), change)
        else { return nil }
        return node.setting(first, to: changed).map(InspectedValue.node)
    }
}

extension InspectedNode {
    /// The member at `segment`.
    func member(_ segment: PathSegment) -> InspectedValue? {
        switch segment {
        case .key(let key), .field(let key): kind == .array ? nil : child(named: key)
        case .index(let index): kind == .array && index >= 0 && index < count ? values[index] : nil
        }
    }

    /// A copy with the member at `segment` set to `value`, or removed when `value` is `nil`.
    func setting(_ segment: PathSegment, to value: InspectedValue?) -> InspectedNode? {
        var keys = keys
        var values = values
        switch segment {
        case .index(let index):
            guard kind == .array, index >= 0, index <= count else { return nil }
            if let value {
                if index == count { values.append(value) } else { values[index] = value }
            } else if index < count {
                values.remove(at: index)
            } else {
                return nil
            }
        case .key(let key), .field(let key):
            guard kind != .array else { return nil }
            if let position = position(of: key) {
                if let value {
                    values[position] = value
                } else {
                    keys.remove(at: position)
                    values.remove(at: position)
                }
            } else if let value {
                keys.append(key)
                values.append(value)
            } else {
                return nil
            }
        }
        return InspectedNode(kind: kind, keys: keys, values: values)
    }
}
