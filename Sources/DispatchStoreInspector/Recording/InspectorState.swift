import DispatchStore
import Foundation

/// Everything an ``Inspector`` records, behind its lock.
struct InspectorState {
    /// The most transactions kept.
    let limit: Int
    var stores: [StoreTrack] = []
    var storeIndex: [String: Int] = [:]
    /// The same, by the store object: a lookup without hashing the identifier. (A store object
    /// lives as long as it is registered, so its identity is not reused meanwhile.)
    var storeIndexByObject: [ObjectIdentifier: Int] = [:]
    /// The kept rows are `rows[head...]`.
    private(set) var rows: [TimelineRow] = []
    private var head = 0
    private(set) var nextRowNumber = 0
    /// The transactions kept, as rows or waiting in `ended`.
    var keptTransactions = 0
    var droppedTransactions = 0
    /// Transactions under way: when their first store began, and the states read after each store.
    /// (As many as the threads running transactions: an array searched from its end.)
    var pending: [Pending] = []
    /// Live transactions that ended after the last row, oldest first, from `endedHead` on: their
    /// rows are made when the rows are read (``settle()``); those before `endedHead` are `nil`.
    var ended: [EndedTransaction?] = []
    var endedHead = 0
    /// Every problem met, the first `maximumProblems` of them with their text.
    private(set) var problems: [Problem] = []
    private(set) var problemCount = 0
    /// What the rows come from.
    var source = Source()
    /// The replay under way, if any: the line whose action is being dispatched.
    var replay: ReplayContext?
    /// The recorder followed, if any.
    var recorder = RecorderLink()
    /// The files rows refer to (logs, journal record files), by index.
    var files: [String] = []

    /// The most problems listed with their text.
    static let maximumProblems = 1_000

    init(limit: Int) {
        self.limit = limit
    }

    /// A transaction under way.
    struct Pending {
        let id: UInt64
        var start: ContinuousClock.Instant?
        /// The states read after each store applied the action, in the order they did.
        var captures: [Capture] = []
    }

    /// What the page's header says about the rows' origin.
    struct Source {
        /// `live`, `log` or `journal`.
        var kind = "live"
        var title = ""
        var path: String?
        var bytes: Int?
        var lines: Int?
        var detail: String?
    }

    /// The line being replayed.
    struct ReplayContext {
        var entry: ReplayedEntry?
        /// The row made for the entry being replayed, to merge its other parts into.
        var entryRow: Int?
        /// Checkpoint digests waiting for their store to reach their number: (row, check index).
        var waitingChecks: [String: [(row: Int, check: Int)]] = [:]
    }

    /// The line being replayed: what the log says of its transaction, and where it is.
    struct ReplayedEntry {
        let id: UInt64
        let time: Date
        let mode: DispatchMode
        let target: String?
        let line: Int
        let file: Int
    }

    /// What the inspector knows of a recorder's history.
    struct RecorderLink {
        var followed = false
        /// The newest entry and how many transactions it stood for when last seen.
        var newestEntry = -1
        var newestCount = 0
        var position = -1
        var currentEntry = -1
        /// The history entry of each transaction the recorder recorded, by transaction id.
        var entryOfTransaction: [UInt64: Int] = [:]
        /// The entries when the page was last written or the history last changed.
        var entries: [(id: Int, transactions: Int, key: String?)] = []
    }

    // MARK: Stores

    /// The index of the store, adding it (with its current state as its first) when new.
    mutating func track(_ store: any AnyStore) -> Int {
        let object = ObjectIdentifier(store)
        if let index = storeIndexByObject[object] { return index }
        if let index = storeIndex[store.identifier] {
            storeIndexByObject[object] = index
            return index
        }
        let index = stores.count
        storeIndex[store.identifier] = index
        var track = StoreTrack(
            identifier: store.identifier,
            typeName: String(reflecting: store.stateType),
            waitsFor: store.waitsFor
        )
        if let (state, sequenceNumber) = store.stateAndSequenceNumber {
            track.start(with: state, sequenceNumber: sequenceNumber, at: nextRowNumber)
        }
        stores.append(track)
        storeIndexByObject[object] = index
        return index
    }

    // MARK: Rows

    var keptRows: ArraySlice<TimelineRow> {
        rows[head...]
    }

    var firstKeptRow: Int {
        rows.count > head ? rows[head].number : nextRowNumber
    }

    /// Adds a row, made from its number; drops the oldest rows when more than `limit`
    /// transactions are kept.
    ///
    /// A row that is not a transaction's comes after the rows of the transactions that ended
    /// before it (``settle()``). `isCounted` says whether a transaction was counted already, when
    /// it ended (``keep(_:)``). Returns the row's number.
    @discardableResult
    mutating func append(
        time: Date,
        _ content: TimelineRow.Content,
        changes: [StoreChanges] = [],
        isCounted: Bool = false
    ) -> Int {
        guard case .transaction = content else {
            settle()
            let number = nextRowNumber
            nextRowNumber += 1
            rows.append(TimelineRow(number: number, time: time, content: content, changes: changes))
            return number
        }
        let number = nextRowNumber
        nextRowNumber += 1
        rows.append(TimelineRow(number: number, time: time, content: content, changes: changes))
        if !isCounted {
            keptTransactions += 1
            while keptTransactions > limit {
                dropOldest()
            }
        }
        return number
    }

    /// Drops the oldest row, or when none is kept, the oldest transaction waiting for its row.
    mutating func dropOldest() {
        if head < rows.count {
            dropOldestRow()
        } else {
            dropOldestEnded()
        }
    }

    /// The kept row numbered `number`, to change it.
    mutating func withRow<Result>(_ number: Int, _ body: (inout TimelineRow) -> Result) -> Result? {
        let index = head + number - firstKeptRow
        guard index >= head, index < rows.count else { return nil }
        return body(&rows[index])
    }

    private mutating func dropOldestRow() {
        let dropped = head
        head += 1
        if case .transaction = rows[dropped].content {
            keptTransactions -= 1
            droppedTransactions += 1
        }
        // The other stores drop their keyframes when the page is written (``pruneStores()``).
        let firstKept = firstKeptRow
        let number = rows[dropped].number
        for change in rows[dropped].changes {
            stores[change.store].drop(
                row: number,
                changes: change.isPending ? nil : change.changes,
                firstKept: firstKept
            )
        }
        // The dropped row's contents are not needed any more; the slot goes when the array is compacted.
        rows[dropped].changes = []
        if head >= 1_024, head * 2 >= rows.count {
            rows.removeFirst(head)
            head = 0
        }
    }

    /// Lets every store forget the keyframes and changes the oldest row kept no longer needs.
    mutating func pruneStores() {
        let firstKept = firstKeptRow
        for index in stores.indices {
            stores[index].drop(row: firstKept - 1, changes: nil, firstKept: firstKept)
        }
    }

    /// Keeps the states read for `captures`, after row `row`: the row's changes, to encode when
    /// the page is written (or sooner, when too many states wait).
    mutating func changes(
        for captures: [Capture],
        row: Int,
        expected: [(store: Int, number: UInt64)] = []
    ) -> [StoreChanges] {
        captures.map { capture in
            let previous = stores[capture.store].sequenceNumber
            stores[capture.store].record(capture.state, sequenceNumber: capture.sequenceNumber, row: row)
            var result = StoreChanges(store: capture.store, isPending: true)
            if let wanted = expected.first(where: { $0.store == capture.store })?.number,
                wanted != capture.sequenceNumber
            {
                result.note =
                    "the state was read after the store applied action #\(capture.sequenceNumber), not #\(wanted): "
                    + "the changes include those of later actions"
            } else if capture.sequenceNumber < previous {
                result.note =
                    "a later state of the store (after action #\(previous)) was shown before this one: the changes "
                    + "undo those of later actions"
            }
            return result
        }
    }

    /// Adds a row that changed the stores' states outside any action (a recorder's move, a snapshot
    /// recovery restored), with the states of `cut`.
    ///
    /// - Parameters:
    ///   - cut: The states of the stores, read at one instant.
    ///   - time: The row's time.
    ///   - content: The row's content, given the stores' captures.
    mutating func append(
        _ cut: [StoreSnapshot],
        time: Date,
        content: ([Capture]) -> TimelineRow.Content
    ) {
        let captures = cut.map { snapshot in
            (
                store: storeIndex[snapshot.storeIdentifier] ?? track(named: snapshot.storeIdentifier),
                state: snapshot.state, sequenceNumber: snapshot.sequenceNumber
            )
        }
        let changes = changes(for: captures, row: nextRowNumber)
        append(time: time, content(captures), changes: changes)
        encodeIfOverBudget(captures)
    }

    /// Encodes the states that wait, of every store: before the page is written.
    mutating func encodeAll() {
        for store in stores.indices {
            encode(store)
        }
    }

    /// Encodes the older half of the states waiting for stores that keep too many.
    mutating func encodeIfOverBudget(_ captures: [Capture]) {
        // By index: a capture holds a state, which a loop over the captures would copy.
        for index in captures.indices {
            let store = captures[index].store
            if stores[store].isOverBudget { encode(store, count: stores[store].waitingCount / 2) }
        }
    }

    /// Encodes `count` states waiting for `store` and puts their changes in their rows; a row
    /// whose state did not change loses its entry for the store.
    private mutating func encode(_ store: Int, count: Int = .max) {
        guard stores[store].waitingCount > 0 else { return }
        for (row, changes) in stores[store].encodePending(count) {
            withRow(row) { row in
                guard let index = row.changes.firstIndex(where: { $0.store == store && $0.isPending }) else { return }
                if changes.isEmpty && row.changes[index].note == nil {
                    row.changes.remove(at: index)
                } else {
                    row.changes[index].changes = changes
                    row.changes[index].isPending = false
                }
            }
        }
    }

    // MARK: Problems

    /// Notes a problem, with a row of its own when `hasRow` (a line of a file), at `time`.
    mutating func note(_ problem: Problem, time: Date, hasRow: Bool) {
        var problem = problem
        if hasRow { problem.row = append(time: time, .problem(problem)) }
        problemCount += 1
        if problems.count < Self.maximumProblems { problems.append(problem) }
    }

    /// The index of `path` in the list of files rows refer to.
    mutating func file(_ path: String) -> Int {
        if let index = files.firstIndex(of: path) { return index }
        files.append(path)
        return files.count - 1
    }
}
