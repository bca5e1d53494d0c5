/// Which transactions belong to which ``RecorderMiddleware/Group``, as a plain value: the
/// bookkeeping ``RecorderHistory`` keeps beside its entries.
///
/// A group is open from ``begin()`` until ``end(_:)``; only an open group takes new members. A member
/// that has not finished yet is *pending*; an ended group is forgotten once it has no pending member
/// left. The ids of the latest finished transactions are kept, so that including one that finished
/// without making an entry does not wait for it forever.
struct RecorderGroups: Sendable {
    /// What is known of one group.
    private struct Group: Sendable {
        /// The id of the entry holding the group's current step, if it has one.
        var stepEntryID: Int?
        /// Included transactions that have not finished yet.
        var pending: Set<UInt64> = []
        /// Whether ``RecorderGroups/end(_:)`` was called.
        var ended = false
    }

    /// What ``RecorderGroups/finish(_:)`` reports of a member that finished.
    struct Member: Equatable, Sendable {
        /// The number of its group.
        let group: Int
        /// The id of the entry holding the group's current step when it finished, if any.
        let stepEntryID: Int?
    }

    /// The open groups and the ended ones still waiting for transactions, by group number.
    private var groups: [Int: Group] = [:]
    private var lastGroupNumber = 0
    /// The group of each included transaction that has not finished yet.
    private var pendingMembers: [UInt64: Int] = [:]
    /// The ids of the latest finished transactions.
    private var recentlyFinished = Ring<UInt64>(capacity: 1024)

    /// How many groups are kept track of: the open ones, and the ended ones with pending members.
    var trackedCount: Int {
        groups.count
    }

    /// How many included transactions have not finished yet.
    var pendingCount: Int {
        pendingMembers.count
    }

    /// Opens a group.
    ///
    /// - Returns: Its number, unique in this value.
    mutating func begin() -> Int {
        lastGroupNumber += 1
        groups[lastGroupNumber] = Group()
        return lastGroupNumber
    }

    /// Ends group `number`: it takes no new members, and is forgotten once its pending members
    /// finished.
    mutating func end(_ number: Int) {
        groups[number]?.ended = true
        forgetIfDone(number)
    }

    /// Whether group `number` was ended (a forgotten group was).
    func isEnded(_ number: Int) -> Bool {
        groups[number]?.ended ?? true
    }

    /// Whether group `number` is open and `transactionID` is not already waiting to join a group.
    func canInclude(_ transactionID: UInt64, in number: Int) -> Bool {
        groups[number]?.ended == false && pendingMembers[transactionID] == nil
    }

    /// Whether `transactionID` is among the latest finished transactions.
    func hasFinished(_ transactionID: UInt64) -> Bool {
        recentlyFinished.lastIndex { $0 == transactionID } != nil
    }

    /// Makes `transactionID`, which has not finished, a pending member of group `number`.
    mutating func addPending(_ transactionID: UInt64, to number: Int) {
        guard groups[number] != nil else { return }
        pendingMembers[transactionID] = number
        groups[number]?.pending.insert(transactionID)
    }

    /// The id of the entry holding group `number`'s current step, if it has one.
    func stepEntryID(of number: Int) -> Int? {
        groups[number]?.stepEntryID
    }

    /// Notes that the entry with id `entryID` holds group `number`'s current step (nothing for a
    /// forgotten group).
    mutating func setStepEntryID(_ entryID: Int, of number: Int) {
        groups[number]?.stepEntryID = entryID
    }

    /// Notes that `transactionID` finished.
    ///
    /// - Returns: Its group and the group's step then, when it was a pending member; the group is
    ///   forgotten if it ended and this was its last pending member.
    mutating func finish(_ transactionID: UInt64) -> Member? {
        recentlyFinished.append(transactionID)
        guard let number = pendingMembers.removeValue(forKey: transactionID) else { return nil }
        let member = Member(group: number, stepEntryID: groups[number]?.stepEntryID)
        groups[number]?.pending.remove(transactionID)
        forgetIfDone(number)
        return member
    }

    private mutating func forgetIfDone(_ number: Int) {
        if let group = groups[number], group.ended, group.pending.isEmpty {
            groups[number] = nil
        }
    }
}
