import DispatchStore
import Foundation

/// A state shaped like an application's: an array, a string, a dictionary and ten plain fields.
///
/// Copying it retains three buffers (`items`, `title`, `fields`), where copying `Counter` retains
/// nothing: the scenarios on it show what the library's copies of a state cost.
struct Document: StateType {
    var items = [Int](repeating: 0, count: 100)
    /// 40 characters, built at run time like a string read from input: too long for a small string,
    /// its bytes sit in a buffer of their own (a literal's would sit in the binary, never retained).
    var title = ["Quarterly report,", "draft 3,", "for the board"].joined(separator: " ")
    var fields: [String: Int] = Dictionary(uniqueKeysWithValues: documentKeys.map { ($0, 0) })
    var revision = 0
    var cursor = 0
    var selectionStart = 0
    var selectionEnd = 0
    var scrollOffset = 0
    var zoom = 100
    var wordCount = 0
    var lineCount = 1
    var authorID = 0
    var flags = 0
}

/// The keys of `Document.fields`.
let documentKeys = (0..<10).map { "field-\($0)" }

/// Changes one item and the revision.
struct Edit: IndexedAction {
    let item: Int

    init(item: Int) {
        self.item = item
    }

    /// The `index`th edit of a run: item `index % 100`.
    init(index: Int) {
        self.init(item: index % 100)
    }

    func apply(to document: inout Document) {
        document.items[item] &+= 1
        document.revision &+= 1
    }
}

final class EditReducer: Reducer<Document, Edit> {
    override func reduce(_ action: Edit, into state: inout Document) {
        action.apply(to: &state)
    }
}

/// Changes one of the ten values the key-path observers of S3r watch: `watchedField(_:)`.
struct Touch: ActionType {
    let field: Int

    func apply(to document: inout Document) {
        switch field {
        case 0..<5: document.fields[documentKeys[field], default: 0] &+= 1
        case 5: document.cursor &+= 1
        case 6: document.selectionEnd &+= 1
        case 7: document.scrollOffset &+= 1
        case 8: document.wordCount &+= 1
        default: document.lineCount &+= 1
        }
    }
}

final class TouchReducer: Reducer<Document, Touch> {
    override func reduce(_ action: Touch, into state: inout Document) {
        action.apply(to: &state)
    }
}

/// The ten values S3r watches, selected by hand (B3r): five entries of `fields`, five stored properties.
func watchedField(_ field: Int, of document: Document) -> Int? {
    switch field {
    case 0..<5: document.fields[documentKeys[field]]
    case 5: document.cursor
    case 6: document.selectionEnd
    case 7: document.scrollOffset
    case 8: document.wordCount
    default: document.lineCount
    }
}

/// The same ten values as key paths (S3r): `\.fields[key]` subscripts, then stored properties.
let watchedEntryPaths: [any KeyPath<Document, Int?> & Sendable] = documentKeys.prefix(5).map { \Document.fields[$0] }
let watchedPropertyPaths: [any KeyPath<Document, Int> & Sendable] = [
    \Document.cursor, \Document.selectionEnd, \Document.scrollOffset, \Document.wordCount, \Document.lineCount,
]

/// A `Document` behind an `NSLock`, changed as the scenarios' reducers change it.
final class LockedDocument: @unchecked Sendable {
    // @unchecked: `value` is only touched while holding `lock`.
    let lock = NSLock()
    var value = Document()

    @inline(never)
    func update(_ edit: Edit) {
        lock.lock()
        edit.apply(to: &value)
        lock.unlock()
    }

    @inline(never)
    func update(_ touch: Touch) {
        lock.lock()
        touch.apply(to: &value)
        lock.unlock()
    }
}

/// B1r to B3r and S1r, S2r, S3r, S5r: B1 to B3 and S1, S2, S3, S5 on a `Document`.
///
/// Each update changes one item and the revision (S3r and B3r: one of the ten watched values), as
/// the reducer does in the scenarios and the same code behind a lock in the baselines.
func realisticScenarios(scale: Double) -> [Scenario] {
    let million = scaled(1_000_000, scale)
    let hundredThousand = scaled(100_000, scale)
    let perThread = scaled(250_000, scale)
    let edits = (0..<100).map { Edit(item: $0) }
    let touches = (0..<10).map(Touch.init)
    return [
        Scenario(
            id: "B1r",
            summary: "baseline: B1 on a Document (an item and the revision changed) behind an NSLock",
            operations: million,
            baseline: nil,
            target: nil
        ) {
            let document = LockedDocument()
            return Repetition(
                run: {
                    for index in 0..<million {
                        document.update(edits[index % 100])
                    }
                },
                check: { checkEdits(document.value, million) }
            )
        },
        Scenario(
            id: "B2r",
            summary: "baseline: B1r plus 1,000 plain closure callbacks taking the Document per update",
            operations: hundredThousand,
            baseline: nil,
            target: nil
        ) {
            let document = LockedDocument()
            let tally = Tally()
            let callbacks: [(Document) -> Void] = (0..<1_000).map { _ in { _ in tally.count &+= 1 } }
            return Repetition(
                run: {
                    for index in 0..<hundredThousand {
                        document.update(edits[index % 100])
                        let state = document.lock.withLock { document.value }
                        for callback in callbacks {
                            callback(state)
                        }
                    }
                },
                check: {
                    checkEdits(document.value, hundredThousand)
                        ?? expect(tally.count, hundredThousand * 1_000, "callbacks")
                }
            )
        },
        Scenario(
            id: "B3r",
            summary: "baseline: B1r plus 1,000 (select, compare, call back if changed) per update, 1 in 10 changed",
            operations: hundredThousand,
            baseline: nil,
            target: nil
        ) {
            let document = LockedDocument()
            let tally = Tally()
            var last = (0..<1_000).map { watchedField($0 % 10, of: document.value) }
            let callbacks: [(Int?) -> Void] = (0..<1_000).map { _ in { _ in tally.count &+= 1 } }
            return Repetition(
                run: {
                    for index in 0..<hundredThousand {
                        document.update(touches[index % 10])
                        let snapshot = document.lock.withLock { document.value }
                        for subscriber in 0..<1_000 {
                            let value = watchedField(subscriber % 10, of: snapshot)
                            if value != last[subscriber] {
                                last[subscriber] = value
                                callbacks[subscriber](value)
                            }
                        }
                    }
                },
                check: {
                    checkTouches(document.value, hundredThousand)
                        ?? expect(tally.count, hundredThousand * 100, "callbacks")
                }
            )
        },
        Scenario(
            id: "S1r",
            summary: ".sync dispatches to one store of a Document (an item and the revision changed), no observers",
            operations: million,
            baseline: "B1r",
            target: 6
        ) {
            let (dispatcher, store) = documentStore(EditReducer())
            return Repetition(
                run: {
                    for index in 0..<million {
                        dispatcher.dispatch(edits[index % 100], mode: .sync)
                    }
                },
                check: { checkEdits(store.state, million) }
            )
        },
        Scenario(
            id: "S2r",
            summary: ".sync dispatches to a Document, 1,000 observers of the whole state",
            operations: hundredThousand,
            baseline: "B2r",
            target: 1.2
        ) {
            let (dispatcher, store) = documentStore(EditReducer())
            let tally = Tally()
            let subscriptions = (0..<1_000).map { _ in store.subscribe { _, _ in tally.count &+= 1 } }
            return Repetition(
                run: {
                    for index in 0..<hundredThousand {
                        dispatcher.dispatch(edits[index % 100], mode: .sync)
                    }
                },
                check: {
                    withExtendedLifetime(subscriptions) {
                        checkEdits(store.state, hundredThousand)
                            ?? expect(tally.count, hundredThousand * 1_000, "observer calls")
                    }
                }
            )
        },
        Scenario(
            id: "S3r",
            summary: ".sync dispatches to a Document, 1,000 key-path observers of 10 values, 100 called per dispatch",
            operations: hundredThousand,
            baseline: "B3r",
            target: 1.5
        ) {
            let (dispatcher, store) = documentStore(TouchReducer())
            let tally = Tally()
            let subscriptions = (0..<1_000).map { index in
                let field = index % 10
                return field < 5
                    ? store.subscribe(watchedEntryPaths[field]) { _ in tally.count &+= 1 }
                    : store.subscribe(watchedPropertyPaths[field - 5]) { _ in tally.count &+= 1 }
            }
            return Repetition(
                run: {
                    for index in 0..<hundredThousand {
                        dispatcher.dispatch(touches[index % 10], mode: .sync)
                    }
                },
                check: {
                    withExtendedLifetime(subscriptions) {
                        checkTouches(store.state, hundredThousand)
                            ?? expect(tally.count, hundredThousand * 100, "observer calls")
                    }
                }
            )
        },
        Scenario(
            id: "S5r",
            summary: "4 threads x .async dispatches over 4 stores of a Document, until all finished",
            operations: perThread * 4,
            baseline: "B1r",
            target: 30
        ) {
            let dispatcher = Dispatcher()
            let stores = (0..<4).map { index in
                Store<Document, Edit>(identifier: "document\(index)", reducer: EditReducer())
            }
            for store in stores {
                try! dispatcher.register(store: store)
            }
            let identifiers = stores.map(\.identifier)
            return Repetition(
                run: {
                    dispatchFromFourThreads(Edit.self, perThread: perThread, to: identifiers, of: dispatcher)
                },
                check: {
                    let states = stores.map(\.state)
                    let revisions = states.map(\.revision).reduce(0, +)
                    let items = states.map { $0.items.reduce(0, +) }.reduce(0, +)
                    return expect(revisions, perThread * 4, "total revision")
                        ?? expect(items, perThread * 4, "item total")
                }
            )
        },
    ]
}

func documentStore<Action: ActionType>(
    _ reducer: Reducer<Document, Action>
) -> (Dispatcher, Store<Document, Action>) {
    let dispatcher = Dispatcher()
    let store = Store<Document, Action>(identifier: "document", reducer: reducer)
    try! dispatcher.register(store: store)
    return (dispatcher, store)
}

/// Checks a document after `count` edits, the `i`th to item `i % 100`.
func checkEdits(_ document: Document, _ count: Int) -> String? {
    if let wrong = expect(document.revision, count, "revision") { return wrong }
    let expected = (0..<100).map { item in (count - item + 99) / 100 }
    return document.items == expected ? nil : "items \(document.items), expected \(expected)"
}

/// Checks a document after `count` touches, the `i`th to field `i % 10`.
func checkTouches(_ document: Document, _ count: Int) -> String? {
    let fresh = Document()
    let changes = (0..<10).map { field in
        (watchedField(field, of: document) ?? 0) - (watchedField(field, of: fresh) ?? 0)
    }
    let expected = (0..<10).map { field in (count - field + 9) / 10 }
    return changes == expected ? nil : "watched values changed \(changes) times, expected \(expected)"
}
