import DispatchStore
import Foundation
import Testing

@testable import DispatchStoreInspector

@Suite("States as trees")
struct TreeEncodingTests {
    struct Point: Codable, Hashable {
        var x: Int
        var y: Int
    }

    struct Sample: Codable {
        var name = "box"
        var count = 3
        var ratio = 0.5
        var flag = true
        var missing: Int?
        var tags: [String] = ["a", "b"]
        var byName: [String: Int] = ["one": 1, "two": 2]
        var byNumber: [Int: String] = [1: "one"]
        var byPoint: [Point: Int] = [Point(x: 1, y: 2): 3]
        var members: Set<String> = ["x", "y"]
        var points: Set<Point> = [Point(x: 0, y: 0)]
        var choice = Choice.some(size: 4)
    }

    enum Choice: Codable {
        case none
        case some(size: Int)
    }

    @Test("an Encodable state: a struct's fields in order, dictionaries by key, sets by member, enums by case")
    func encodableState() throws {
        let tree = try TreeEncoding.tree(of: Sample())
        let root = try #require(tree.node)
        #expect(root.kind == .object)
        #expect(
            root.keys == [
                "name", "count", "ratio", "flag", "tags", "byName", "byNumber", "byPoint", "members", "points",
                "choice",
            ]
        )
        #expect(root.child(named: "name") == .string("box"))
        #expect(root.child(named: "count") == .integer(3))
        #expect(root.child(named: "ratio") == .double(0.5))
        #expect(root.child(named: "flag") == .bool(true))
        #expect(root.child(named: "tags")?.node?.values == [.string("a"), .string("b")])
        let byName = try #require(root.child(named: "byName")?.node)
        #expect(byName.kind == .dictionary && Set(byName.keys) == ["one", "two"])
        #expect(root.child(named: "byNumber")?.node?.keys == ["1"])
        #expect(root.child(named: "byPoint")?.node?.keys == [#"["o","x",1,"y",2]"#])
        let members = try #require(root.child(named: "members")?.node)
        #expect(members.kind == .set && Set(members.keys) == ["x", "y"])
        #expect(root.child(named: "points")?.node?.kind == .set)
        let choice = try #require(root.child(named: "choice")?.node)
        #expect(choice.keys == ["some"])
        #expect(choice.child(named: "some")?.node?.child(named: "size") == .integer(4))
    }

    @Test("encoding the next state reuses every member whose storage did not change")
    func reuse() throws {
        var state = Sample()
        state.tags = (0..<100).map { "tag \($0)" }
        state.byName = Dictionary(uniqueKeysWithValues: (0..<100).map { ("key \($0)", $0) })
        let first = try TreeEncoding.tree(of: state)
        var next = state
        next.byName["key 7"] = -7
        let second = try TreeEncoding.tree(of: next, previous: first)
        let before = try #require(first.node)
        let after = try #require(second.node)
        #expect(before !== after)
        // The array's storage is shared by both states: its node is taken as it is.
        #expect(after.child(named: "tags") == before.child(named: "tags"))
        #expect(after.child(named: "byName") != before.child(named: "byName"))
        #expect(
            TreeDiff.changes(from: first, to: second) == [
                .set(container: [.field("byName")], member: .key("key 7"), value: .integer(-7))
            ]
        )
        _ = state
    }

    struct Entry: Codable, Equatable {
        var name: String
        var size: Int
    }

    struct Large: Codable {
        var entries: [String: Entry] = [:]
        var members: Set<String> = []
        var numbers: [Int: Int] = [:]
        var list: [Int] = []
    }

    @Test(
        "large dictionaries, sets and arrays changed at random: each tree shares what it can, and its changes rebuild it"
    )
    func largeCollections() throws {
        var random = SeededRandom(seed: 77)
        var state = Large()
        for index in 0..<100 {
            state.entries["key \(index)"] = Entry(name: "entry \(index)", size: index)
            state.members.insert("member \(index)")
            state.numbers[index] = index
        }
        var previousState = state
        var previous = try TreeEncoding.tree(of: state)
        for round in 0..<150 {
            let key = Int(random.next() % 150)
            switch random.next() % 7 {
            case 0: state.entries["key \(key)"] = Entry(name: "changed \(round)", size: round)
            case 1: state.entries["key \(key)"] = nil
            case 2: state.members.insert("member \(key)")
            case 3: state.members.remove("member \(key)")
            case 4: state.numbers[key, default: 0] += 1
            case 5: state.list.append(round)
            default:
                // Enough new members at once to make the dictionary grow: its order changes.
                for extra in 0..<Int(random.next() % 120) {
                    state.entries["bulk \(round) \(extra)"] = Entry(name: "", size: 0)
                }
            }
            let next = try TreeEncoding.tree(of: state, previous: previous)
            let changes = TreeDiff.changes(from: previous, to: next)
            #expect(
                previous.applying(changes)?.isEquivalent(to: try TreeEncoding.tree(of: state)) == true,
                "round \(round)"
            )
            #expect(changes.count <= 121, "round \(round): \(changes.count) changes")
            previous = next
            previousState = state
        }
        _ = previousState
    }

    final class Box: Codable, @unchecked Sendable {
        var value: Int

        init(_ value: Int) {
            self.value = value
        }
    }

    struct Holder: Codable {
        var box: Box
        var boxes: [Box]
    }

    enum Event: Codable, Equatable {
        case note(text: String, size: Int)
        case ratio(Double)
        case empty
    }

    struct Journal: Codable {
        var count = 0
        var last: Event?
    }

    @Test("a member equal to one met before takes that one's tree; others, and a NaN, are encoded again")
    func membersMetBefore() throws {
        let long = String(repeating: "a note too long to be held in the value ", count: 2)
        let events: [Event?] = [
            .note(text: "short", size: 1), .note(text: long, size: 1), .empty, .note(text: "short", size: 1),
            .note(text: String(repeating: "a note too long to be held in the value ", count: 2), size: 1),
            .note(text: long, size: 2), .ratio(.nan), .ratio(.nan), .ratio(0.5), .ratio(-0.0), .ratio(0.0), nil,
            .note(text: long, size: 1), .empty,
        ]
        let trees = MemberTrees()
        var previous: InspectedValue?
        var tree: InspectedValue = .null
        var shown: [InspectedValue] = []
        for (count, event) in events.enumerated() {
            let state = Journal(count: count, last: event)
            tree = try TreeEncoding.tree(of: state, previous: previous, trees: trees)
            // What a tree made without the trees met before says, and the changes from the previous one.
            #expect(PageJSON.text(of: tree) == PageJSON.text(of: try TreeEncoding.tree(of: state)), "\(count)")
            if let previous {
                #expect(previous.applying(TreeDiff.changes(from: previous, to: tree))?.isEquivalent(to: tree) == true)
            }
            shown.append(tree)
            previous = tree
        }
        // The fourth state's event is the first's: the same tree.
        #expect(shown[3].node?.child(named: "last") == shown[0].node?.child(named: "last"))
        #expect(shown[12].node?.child(named: "last") == shown[1].node?.child(named: "last"))
        // A member whose tree is large is not kept: every version of it would stay alive.
        let large = Event.note(text: String(repeating: "x", count: MemberTrees.largestTree), size: 0)
        trees.keep(try TreeEncoding.tree(of: large), of: large)
        #expect(trees.tree(of: large) == nil)
        #expect(trees.tree(of: Event.note(text: "short", size: 1)) != nil)
    }

    @Test("a class instance inside a state is encoded again each time: it can change behind the same reference")
    func classesAreNotReused() throws {
        let box = Box(1)
        let holder = Holder(box: box, boxes: [box])
        let first = try TreeEncoding.tree(of: holder)
        box.value = 2
        let second = try TreeEncoding.tree(of: holder, previous: first)
        #expect(TreeDiff.changes(from: first, to: second).count == 2)
        #expect(second.node?.child(named: "box")?.node?.child(named: "value") == .integer(2))
    }

    @Test("a value that is not Encodable is shown through reflection: fields, collections, enum cases")
    func reflection() throws {
        var tally = Tally()
        tally.total = 5
        tally.words = ["fig"]
        tally.kind = .some(count: 1)
        let root = try #require(Reflection.tree(of: tally).node)
        #expect(root.keys == ["total", "words", "kind"])
        #expect(root.child(named: "total") == .integer(5))
        #expect(root.child(named: "words")?.node?.values == [.string("fig")])
        #expect(root.child(named: "kind")?.node?.keys == ["some"])
        #expect(Reflection.tree(of: Tally.Kind.empty) == .string("empty"))
    }

    struct Refusing: StateType, Encodable {
        var count = 0
        func encode(to encoder: any Encoder) throws {
            throw EncodingError.invalidValue(count, .init(codingPath: [], debugDescription: "cannot encode a Refusing"))
        }
    }

    @Test("a state whose encoding throws is shown through reflection, and says why")
    func encodingFailure() {
        var track = StoreTrack(identifier: "refusing", typeName: "Refusing", waitsFor: [])
        track.start(with: Refusing(), sequenceNumber: 0, at: 0)
        _ = track.encodePending()
        #expect(track.reflected)
        #expect(track.encodingFailure?.contains("cannot encode a Refusing") == true)
        #expect(track.tree.node?.child(named: "count") == .integer(0))
    }

    @Test("numbers a double cannot hold exactly, and non-finite doubles, are written as text")
    func bigNumbers() {
        func json(_ value: InspectedValue) -> String {
            var writer = PageJSON()
            writer.write(value)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        #expect(json(.integer(9_007_199_254_740_992)) == "9007199254740992")
        #expect(json(.integer(Int64.max)) == #"["n","9223372036854775807"]"#)
        #expect(json(.unsigned(UInt64.max)) == #"["n","18446744073709551615"]"#)
        #expect(json(.double(.nan)) == #"["n","nan"]"#)
        #expect(json(.double(-.infinity)) == #"["n","-inf"]"#)
        #expect(json(.double(0.1)) == "0.1")
    }
}
