import DispatchStore
import DispatchStoreTesting
import TestSupport
import Testing

/// A board of cards: dictionaries, arrays, sets, optionals and an enum with a payload.
private struct Board: StateType, Equatable {
    struct Card: Equatable, Sendable {
        var title: String
        var tags: Set<String> = []
        var due: Int?
    }

    enum Phase: Equatable, Sendable {
        case idle
        case editing(card: Int, draft: String)
    }

    var columns: [String: [Card]] = [:]
    var phase = Phase.idle
    var archived: [Card] = []
}

private enum BoardAction: ActionType {
    case setUp
}

private final class BoardReducer: Reducer<Board, BoardAction> {
    override func reduce(_ action: BoardAction, into state: inout Board) {
        state.columns = ["todo": [Board.Card(title: "a", tags: ["x"], due: 3)], "done": []]
        state.phase = .editing(card: 0, draft: "hello")
    }
}

/// The same board, not `Equatable`: compared field by field.
private struct LooseBoard: StateType {
    var cards: [String] = []
    var counts: [String: Int] = [:]
}

private enum LooseAction: ActionType {
    case add(String)
}

private final class LooseReducer: Reducer<LooseBoard, LooseAction> {
    override func reduce(_ action: LooseAction, into state: inout LooseBoard) {
        if case .add(let card) = action {
            state.cards.append(card)
            state.counts[card, default: 0] += 1
        }
    }
}

@Suite("DispatcherTester: field-level differences")
struct StateDiffTests {
    @Test("each differing field is one line with its path: keys, indices, set elements, optionals, enum payloads")
    func paths() async throws {
        let dispatcher = Dispatcher()
        let board = Store<Board, BoardAction>(identifier: "board", reducer: BoardReducer())
        try dispatcher.register(store: board)
        let tester = DispatcherTester(dispatcher)
        let issues = await recordedIssues {
            await tester.send(BoardAction.setUp) {
                $0.expect(board) {
                    $0.columns = ["todo": [Board.Card(title: "b", tags: ["y"])], "doing": []]
                    $0.phase = .editing(card: 0, draft: "hell")
                    $0.archived = [Board.Card(title: "z")]
                }
            }
        }
        #expect(
            issues.map(\.text) == [
                """
                send(BoardAction.setUp): the state of store 'board' differs from the expectation:
                  columns["doing"]: expected [], actual (none)
                  columns["done"]: expected (none), actual []
                  columns["todo"][0].title: expected "b", actual "a"
                  columns["todo"][0].tags: expected "y", actual (none)
                  columns["todo"][0].tags: expected (none), actual "x"
                  columns["todo"][0].due: expected nil, actual 3
                  phase.editing.draft: expected "hell", actual "hello"
                  archived[0]: expected Card(title: "z", tags: Set([]), due: nil), actual (none)
                """
            ]
        )
        await tester.finish()
    }

    @Test("a state that is not Equatable is compared and reported field by field")
    func nonEquatable() async throws {
        let dispatcher = Dispatcher()
        let board = Store<LooseBoard, LooseAction>(identifier: "loose", reducer: LooseReducer())
        try dispatcher.register(store: board)
        let tester = DispatcherTester(dispatcher)
        let issues = await recordedIssues {
            await tester.send(LooseAction.add("a")) {
                $0.expect(board) {
                    $0.cards = ["a"]
                    $0.counts = ["a": 2]
                }
            }
            // No expectation: the change is found field by field too.
            await tester.send(LooseAction.add("b"))
        }
        #expect(
            issues.map(\.text) == [
                """
                send(LooseAction.add("a")): the state of store 'loose' differs from the expectation:
                  counts["a"]: expected 2, actual 1
                """,
                """
                send(LooseAction.add("b")): store 'loose' changed, but no expectation names it; expect the change \
                with $0.expect(store) { ... }:
                  cards[1]: before (none), after "b"
                  counts["b"]: before (none), after 1
                """,
            ]
        )
        await tester.finish()
    }
}
