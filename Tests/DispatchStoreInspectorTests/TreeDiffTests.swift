import Testing

@testable import DispatchStoreInspector

@Suite("Changes between states")
struct TreeDiffTests {
    private func object(
        _ members: KeyValuePairs<String, InspectedValue>,
        kind: InspectedNode.Kind = .object
    ) -> InspectedValue {
        .node(InspectedNode(kind: kind, keys: members.map(\.key), values: members.map(\.value)))
    }

    private func array(_ values: [InspectedValue]) -> InspectedValue {
        .node(InspectedNode(kind: .array, keys: [], values: values))
    }

    @Test("each changed path once: a member added, removed or set, an array spliced, an enum's new case")
    func changes() {
        let old = object([
            "count": .integer(1), "items": object(["a": .integer(1), "b": .integer(2)], kind: .dictionary),
            "list": array([.string("x"), .string("y")]), "choice": object(["restocked": .integer(5)]),
        ])
        let new = object([
            "count": .integer(2), "items": object(["a": .integer(1), "c": .integer(3)], kind: .dictionary),
            "list": array([.string("x"), .string("z"), .string("y")]), "choice": object(["reserved": .integer(5)]),
        ])
        let changes = TreeDiff.changes(from: old, to: new)
        let choice = new.node!.child(named: "choice")!
        #expect(
            changes == [
                .set(container: [], member: .field("count"), value: .integer(2)),
                .set(container: [.field("items")], member: .key("c"), value: .integer(3)),
                .remove(container: [.field("items")], member: .key("b")),
                .splice(container: [.field("list")], index: 1, deleteCount: 0, values: [.string("z")]),
                .set(container: [], member: .field("choice"), value: choice),
            ]
        )
        #expect(old.applying(changes)?.isEquivalent(to: new) == true)
        #expect(TreeDiff.changes(from: old, to: old).isEmpty)
        #expect(TreeDiff.changes(from: .integer(1), to: .string("1")) == [.replace(.string("1"))])
    }

    @Test("applying the changes between two random trees gives the second one, 2,000 times")
    func randomTrees() {
        var random = SeededRandom(seed: 2_026)
        var tree = randomTree(depth: 0, random: &random)
        for round in 0..<2_000 {
            let next = mutate(tree, random: &random)
            let changes = TreeDiff.changes(from: tree, to: next)
            let rebuilt = tree.applying(changes)
            #expect(rebuilt?.isEquivalent(to: next) == true, "round \(round): \(changes)")
            tree = next
        }
    }

    private func randomScalar(_ random: inout SeededRandom) -> InspectedValue {
        switch random.next() % 5 {
        case 0: .integer(Int64(random.next() % 100))
        case 1: .string(["a", "b", "<c>", "d\u{2028}"][Int(random.next() % 4)])
        case 2: .bool(random.next() % 2 == 0)
        case 3: .double(Double(random.next() % 1_000) / 8)
        default: .null
        }
    }

    private func randomTree(depth: Int, random: inout SeededRandom) -> InspectedValue {
        guard depth < 3, random.next() % 3 != 0 else { return randomScalar(&random) }
        let count = Int(random.next() % 5)
        let kinds: [InspectedNode.Kind] = [.object, .dictionary, .array, .set]
        let kind = kinds[Int(random.next() % 4)]
        var keys: [String] = []
        var values: [InspectedValue] = []
        for index in 0..<count {
            if kind != .array { keys.append("k\(index)") }
            values.append(kind == .set ? .string("k\(index)") : randomTree(depth: depth + 1, random: &random))
        }
        return .node(InspectedNode(kind: kind, keys: keys, values: values))
    }

    /// The tree with one random member changed, added or removed, somewhere.
    private func mutate(_ tree: InspectedValue, random: inout SeededRandom) -> InspectedValue {
        guard case .node(let node) = tree, random.next() % 4 != 0 else {
            return random.next() % 3 == 0 ? randomTree(depth: 1, random: &random) : randomScalar(&random)
        }
        var keys = node.keys
        var values = node.values
        let choice = random.next() % 3
        if choice == 0 || values.isEmpty {
            let key = "k\(random.next() % 8)"
            let value = node.kind == .set ? InspectedValue.string(key) : randomTree(depth: 2, random: &random)
            if node.kind == .array {
                values.insert(value, at: Int(random.next() % UInt64(values.count + 1)))
            } else if let index = keys.firstIndex(of: key) {
                values[index] = value
            } else {
                keys.append(key)
                values.append(value)
            }
        } else if choice == 1 {
            let index = Int(random.next() % UInt64(values.count))
            values.remove(at: index)
            if node.kind != .array { keys.remove(at: index) }
        } else {
            let index = Int(random.next() % UInt64(values.count))
            if node.kind != .set { values[index] = mutate(values[index], random: &random) }
        }
        return .node(InspectedNode(kind: node.kind, keys: keys, values: values))
    }
}
