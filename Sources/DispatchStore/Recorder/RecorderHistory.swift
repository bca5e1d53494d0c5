import Foundation

/// A recorder's history and the rules that change it, as a plain value: no lock, no thread, no
/// dispatcher.
///
/// ``RecorderMiddleware`` keeps one behind its lock. It takes the consistent cuts and restores the
/// stores; this type decides what the history becomes: which entry a finished transaction makes or
/// replaces, where a move goes, which entries a group's step merges.
///
/// - Entries live in a ring of at most `limit` entries: appending to a full history drops the oldest.
///   ``position`` is an index in ``entries``; entry ids never change and never repeat.
/// - Recording after moving back drops the entries ahead of ``position`` (the redo tail) first.
/// - Every move starts a new *epoch*. An entry of an earlier epoch is never merged into: a move ends
///   every run of a group key and every group's current step.
/// - A group's *step* is the entry holding its transactions. ``RecorderGroups`` keeps which
///   transactions belong to which group.
struct RecorderHistory: Sendable {
    typealias Entry = RecorderMiddleware.Entry

    /// Where a move goes.
    enum Move: Sendable {
        /// The entry before ``RecorderHistory/position``.
        case back
        /// The entry after ``RecorderHistory/position``.
        case forward
        /// The entry at this index in ``RecorderHistory/entries``.
        case to(Int)
    }

    private var ring: Ring<Entry>
    /// The index in ``entries`` of the entry the stores were last set to or recorded at.
    private(set) var position = 0
    private var nextEntryID = 0
    /// Incremented by every move: entries taken before the latest move are not merged into.
    private var epoch = 0
    /// Which transactions belong to which group.
    private(set) var groups = RecorderGroups()

    /// Creates an empty history.
    ///
    /// The entries are allocated as they come, so a large limit costs nothing up front.
    ///
    /// - Parameter limit: The most entries to keep; at least 1 (``RecorderMiddleware`` checks it).
    init(limit: Int) {
        ring = Ring(capacity: limit)
    }

    // MARK: Reading

    /// The most entries the history keeps.
    var limit: Int {
        ring.capacity
    }

    /// How many entries the history holds.
    var count: Int {
        ring.count
    }

    /// The entries, oldest first.
    var entries: [Entry] {
        ring.elements
    }

    /// The entry at ``position``, or `nil` while the history is empty.
    var currentEntry: Entry? {
        ring.count > 0 ? ring[position] : nil
    }

    /// Whether a move ``Move/back`` has an entry to go to.
    var canGoBack: Bool {
        position > 0
    }

    /// Whether a move ``Move/forward`` has an entry to go to.
    var canGoForward: Bool {
        position + 1 < ring.count
    }

    /// The entry at `index` in ``entries``.
    func entry(at index: Int) -> Entry {
        ring[index]
    }

    // MARK: Moving

    /// The position `move` leads to.
    ///
    /// ``Move/back`` and ``Move/forward`` are computed from a position inside the history, so they
    /// cannot overflow; any index is checked, `Int.min` and `Int.max` included.
    ///
    /// - Throws: ``DispatchError`` with code ``DispatchError/Code/historyPositionOutOfRange``, naming
    ///   the position and the valid range, when it is outside the history.
    func destination(of move: Move) throws(DispatchError) -> Int {
        let destination =
            switch move {
            case .back: position - 1
            case .forward: position + 1
            case .to(let index): index
            }
        guard destination >= 0 && destination < ring.count else {
            throw DispatchError(
                .historyPositionOutOfRange,
                ring.count > 0
                    ? "History position \(destination) is out of range: the recorder holds positions 0 through "
                        + "\(ring.count - 1)."
                    : "History position \(destination) is out of range: the history holds no entries."
            )
        }
        return destination
    }

    /// Notes that the stores were set to the entry at `destination`.
    ///
    /// It becomes the position, and a new epoch starts: the next transaction makes a new entry.
    ///
    /// - Parameter destination: A position from ``destination(of:)``.
    mutating func moved(to destination: Int) {
        precondition(
            destination >= 0 && destination < ring.count,
            "recorder moved to position \(destination) outside its \(ring.count) entries"
        )
        position = destination
        epoch += 1
    }

    // MARK: Recording

    /// Takes entry 0: the states when the recorder was attached.
    ///
    /// - Parameters:
    ///   - snapshots: The states of every store.
    ///   - date: When they were read.
    mutating func recordStart(_ snapshots: [StoreSnapshot], at date: Date) {
        precondition(ring.count == 0, "recorder taking its first entry with \(ring.count) entries already")
        append(transaction: nil, snapshots: snapshots, groupKey: nil, group: nil, transactionCount: 0, at: date)
    }

    /// Gives `snapshot`, the state of a store registered after some entries were taken, to every
    /// entry that has no state for that store.
    mutating func backfill(_ snapshot: StoreSnapshot) {
        for index in 0..<ring.count where ring[index].state(of: snapshot.storeIdentifier) == nil {
            ring[index].snapshots.append(snapshot)
        }
    }

    /// Notes that `transaction` finished and, when `snapshots` are given, records it.
    ///
    /// A recorded transaction is merged into its group's step or its key's run when there is one to
    /// merge into, and makes a new entry otherwise.
    ///
    /// - Parameters:
    ///   - transaction: The finished transaction.
    ///   - snapshots: The states of every store when it finished, or `nil` when it is not recorded.
    ///   - key: Its group key, if any.
    ///   - date: When it finished.
    /// - Returns: Whether the history changed.
    mutating func finish(
        _ transaction: Transaction,
        snapshots: [StoreSnapshot]?,
        groupKey key: (any Hashable & Sendable)?,
        at date: Date
    ) -> Bool {
        let member = groups.finish(transaction.id)
        guard let snapshots else { return false }
        if let member {
            record(transaction, snapshots: snapshots, as: member, at: date)
        } else if !mergeIntoRun(transaction, snapshots: snapshots, groupKey: key, at: date) {
            append(
                transaction: transaction,
                snapshots: snapshots,
                groupKey: key,
                group: nil,
                transactionCount: 1,
                at: date
            )
        }
        return true
    }

    /// Replaces the newest entry's states when it is the current one, of this epoch, and has the same
    /// non-`nil` key.
    ///
    /// - Returns: Whether it did.
    private mutating func mergeIntoRun(
        _ transaction: Transaction,
        snapshots: [StoreSnapshot],
        groupKey key: (any Hashable & Sendable)?,
        at date: Date
    ) -> Bool {
        guard let key, ring.count > 0, position == ring.count - 1 else { return false }
        let newest = ring[position]
        guard let newestKey = newest.groupKey, AnyHashable(newestKey) == AnyHashable(key), newest.group == nil,
            newest.epoch == epoch
        else { return false }
        ring[position] = Entry(
            id: newest.id,
            transaction: transaction,
            date: date,
            snapshots: snapshots,
            groupKey: key,
            transactionCount: newest.transactionCount + 1,
            epoch: epoch,
            group: nil
        )
        return true
    }

    /// Records a transaction of a group: into the group's step when it has one in this epoch, as a
    /// new entry otherwise.
    private mutating func record(
        _ transaction: Transaction,
        snapshots: [StoreSnapshot],
        as member: RecorderGroups.Member,
        at date: Date
    ) {
        let number = member.group
        guard let stepIndex = stepIndex(ofEntry: member.stepEntryID) else {
            append(
                transaction: transaction,
                snapshots: snapshots,
                groupKey: nil,
                group: number,
                transactionCount: 1,
                at: date
            )
            groups.setStepEntryID(ring[position].id, of: number)
            return
        }
        let count = ring[stepIndex].transactionCount + 1
        if stepIndex == ring.count - 1 {
            // The step is the newest entry: its states are replaced in place.
            ring[stepIndex] = Entry(
                id: ring[stepIndex].id,
                transaction: transaction,
                date: date,
                snapshots: snapshots,
                groupKey: nil,
                transactionCount: count,
                epoch: epoch,
                group: number
            )
        } else {
            // Other transactions were recorded since: the step moves past them.
            append(
                transaction: transaction,
                snapshots: snapshots,
                groupKey: nil,
                group: number,
                transactionCount: count,
                at: date
            )
            remove(at: stepIndex)
            groups.setStepEntryID(ring[position].id, of: number)
        }
    }

    /// Drops the redo tail, appends an entry (dropping the oldest when full) and moves to it.
    private mutating func append(
        transaction: Transaction?,
        snapshots: [StoreSnapshot],
        groupKey: (any Hashable & Sendable)?,
        group: Int?,
        transactionCount: Int,
        at date: Date
    ) {
        if ring.count > 0 {
            ring.removeLast(ring.count - 1 - position)
        }
        ring.append(
            Entry(
                id: nextEntryID,
                transaction: transaction,
                date: date,
                snapshots: snapshots,
                groupKey: groupKey,
                transactionCount: transactionCount,
                epoch: epoch,
                group: group
            )
        )
        nextEntryID += 1
        position = ring.count - 1
    }

    /// Removes the entry at `index`, which is below ``position``.
    private mutating func remove(at index: Int) {
        precondition(index < position, "recorder removing entry \(index) at or after the position \(position)")
        ring.remove(at: index)
        position -= 1
    }

    // MARK: Groups

    /// Starts a group.
    ///
    /// - Returns: The group's number, for the other group methods.
    mutating func beginGroup() -> Int {
        groups.begin()
    }

    /// Makes the transaction with id `transactionID` part of group `number`'s step.
    ///
    /// A recorded transaction joins the step at once; one that has not finished joins it when it
    /// finishes. Does nothing for an ended group, a transaction already in a group, or one that
    /// finished without an entry of this epoch.
    ///
    /// - Returns: Whether the history changed.
    mutating func include(_ transactionID: UInt64, inGroup number: Int) -> Bool {
        guard groups.canInclude(transactionID, in: number) else { return false }
        if let index = ring.lastIndex(where: { $0.transaction?.id == transactionID }) {
            return join(entryAt: index, group: number)
        }
        // One that finished without making an entry (or whose entry is gone) has nothing to group.
        if !groups.hasFinished(transactionID) {
            groups.addPending(transactionID, to: number)
        }
        return false
    }

    /// Ends group `number`: later inclusions do nothing; its pending transactions still join its step.
    mutating func endGroup(_ number: Int) {
        groups.end(number)
    }

    /// Makes the recorded entry at `index`, of a transaction that finished before it was included,
    /// part of group `number`'s step.
    ///
    /// - Returns: Whether the history changed.
    private mutating func join(entryAt index: Int, group number: Int) -> Bool {
        let entry = ring[index]
        guard entry.group == nil, entry.epoch == epoch else { return false }
        guard let stepIndex = stepIndex(ofEntry: groups.stepEntryID(of: number)) else {
            ring[index] = entry.with(group: number)
            groups.setStepEntryID(entry.id, of: number)
            return true
        }
        // Two entries of the group: the newer one holds the step, the older one goes.
        let (older, newer) = stepIndex < index ? (stepIndex, index) : (index, stepIndex)
        let count = ring[older].transactionCount + ring[newer].transactionCount
        ring[newer] = ring[newer].with(group: number, transactionCount: count)
        remove(at: older)
        groups.setStepEntryID(ring[newer - 1].id, of: number)
        return true
    }

    /// The index of the entry with id `id`, if it is still in the history and of this epoch: a
    /// group's step that can still be merged into.
    private func stepIndex(ofEntry id: Int?) -> Int? {
        guard let id, let index = ring.lastIndex(where: { $0.id == id }), ring[index].epoch == epoch else {
            return nil
        }
        return index
    }
}

extension RecorderMiddleware.Entry {
    /// The same entry, as the step of group `group` standing for `transactionCount` transactions.
    fileprivate func with(group: Int, transactionCount: Int? = nil) -> Self {
        Self(
            id: id,
            transaction: transaction,
            date: date,
            snapshots: snapshots,
            groupKey: nil,
            transactionCount: transactionCount ?? self.transactionCount,
            epoch: epoch,
            group: group
        )
    }
}
