import DispatchStore

/// One store as the inspector follows it: the states read after each row, kept as values until
/// the page needs them, and what the page needs to rebuild any of them (keyframes, and the changes
/// of dropped rows since the oldest one).
///
/// Reading a state after a transaction only keeps the value (``record(_:sequenceNumber:row:)``):
/// encoding it and comparing it with the one before waits for ``encodePending(_:)``, called when
/// the page is written or when the values waiting would take too much memory. The states of a
/// store form one line: the encoded part (``tree``, the state after the last encoded row, with
/// the keyframes behind it) or, when nothing is encoded, a starting value (`base`), then the
/// values waiting, in row order.
struct StoreTrack {
    let identifier: String
    var typeName: String
    var waitsFor: [String]
    /// Whether the states are shown through reflection (the state is not `Encodable`, or failed to
    /// encode).
    var reflected = false
    /// Why encoding failed, the first time it did.
    var encodingFailure: String?
    /// How the store's states are encoded, found from the first one (a store's states have one type).
    private var encoder: StateEncoder?
    /// The trees of members met in the store's states, to reuse for equal members.
    private let memberTrees = MemberTrees()
    /// The latest encoded state: it keeps alive the buffers the tree's fingerprints refer to.
    private var value: (any StateType)?
    /// The latest encoded state's tree; `.null` when nothing is encoded.
    private(set) var tree: InspectedValue = .null
    /// Whether ``tree`` holds an encoded state.
    private(set) var isEncoded = false
    /// The state before the first value waiting, when nothing is encoded: where it applies from
    /// (a row number) and the value.
    private var base: (position: Int, value: any StateType)?
    /// The states read and not encoded yet, oldest first, each with the row it was read after.
    private var waiting: [(row: Int, value: any StateType)] = []
    private var waitingStart = 0
    /// The sequence number of the latest state read.
    private(set) var sequenceNumber: UInt64 = 0
    /// Full trees, each the state after the rows numbered below `position`.
    ///
    /// The first is at or before the oldest row kept.
    private(set) var keyframes: [(position: Int, tree: InspectedValue)] = []
    /// The changes of dropped rows made after the first keyframe, by row number: with it, they
    /// give the state before the oldest row kept.
    private(set) var hiddenChanges: [(row: Int, changes: [TreeChange])] = []
    /// Roughly how many bytes of changes came since the last keyframe, and how big it was.
    private var sinceKeyframe = 0
    private var keyframeSize = 0
    /// About how big the store's state is in the page, from its last keyframe (kept when the
    /// encoded part is forgotten): what the budget of the values waiting counts with.
    private var stateSize = 0

    /// Keyframes are at least this far apart, in bytes of changes.
    static let minimumKeyframeSpacing = 16_384
    /// About how much the values waiting to be encoded may take, by the size of the last tree:
    /// past it, the older half is encoded at once.
    static let waitingBudget = 64 << 20

    init(identifier: String, typeName: String, waitsFor: [String]) {
        self.identifier = identifier
        self.typeName = typeName
        self.waitsFor = waitsFor
    }

    /// How many states the track holds: those waiting, those taken from the waiting ones and not
    /// let go yet, and the starting value.
    var heldStateCount: Int {
        waiting.count + (base == nil ? 0 : 1)
    }

    /// How many states wait to be encoded.
    var waitingCount: Int {
        waiting.count - waitingStart
    }

    /// Whether the states waiting would take more than ``waitingBudget``, by the size of the
    /// store's state (unknown until 64 wait: then some are encoded, and it is known).
    var isOverBudget: Bool {
        guard waitingCount >= 64 else { return false }
        return stateSize == 0 || waitingCount * stateSize > Self.waitingBudget
    }

    /// Takes the store's first state, as the state before the row numbered `position`.
    mutating func start(with state: any StateType, sequenceNumber: UInt64, at position: Int) {
        restart(with: state, at: position)
        waiting = []
        waitingStart = 0
        self.sequenceNumber = sequenceNumber
    }

    /// Forgets what is encoded: `state` is the state from the row numbered `position` on.
    private mutating func restart(with state: any StateType, at position: Int) {
        base = (position, state)
        value = nil
        tree = .null
        isEncoded = false
        keyframes = []
        hiddenChanges = []
        sinceKeyframe = 0
        keyframeSize = 0
    }

    /// Keeps a new state, read after the row numbered `row`, to encode later.
    mutating func record(_ state: any StateType, sequenceNumber: UInt64, row: Int) {
        waiting.append((row, state))
        self.sequenceNumber = sequenceNumber
    }

    /// Encodes the `count` oldest states waiting (all of them by default), each compared with the
    /// one before it.
    ///
    /// - Returns: The changes of each, with the row it was read after.
    mutating func encodePending(_ count: Int = .max) -> [(row: Int, changes: [TreeChange])] {
        if !isEncoded, let base {
            tree = makeTree(base.value)
            value = base.value
            isEncoded = true
            keyframes = [(base.position, tree)]
            keyframeSize = Self.estimatedSize(of: tree)
            stateSize = keyframeSize
            sinceKeyframe = 0
            self.base = nil
        }
        var results: [(row: Int, changes: [TreeChange])] = []
        let end = waitingStart + min(count, waitingCount)
        results.reserveCapacity(end - waitingStart)
        for index in waitingStart..<end {
            let (row, state) = waiting[index]
            let next = makeTree(state)
            let changes = TreeDiff.changes(from: tree, to: next)
            value = state
            tree = next
            sinceKeyframe += changes.reduce(0) { $0 + Self.estimatedSize(of: $1) }
            if sinceKeyframe >= max(keyframeSize, Self.minimumKeyframeSpacing) {
                keyframes.append((row + 1, tree))
                keyframeSize = Self.estimatedSize(of: tree)
                stateSize = keyframeSize
                sinceKeyframe = 0
            }
            results.append((row, changes))
        }
        waitingStart = end
        dropConsumedPrefix(of: &waiting, head: &waitingStart)
        return results
    }

    private mutating func makeTree(_ state: any StateType) -> InspectedValue {
        if !reflected {
            do {
                if let encoded = try encoder?.tree(state, tree, memberTrees) { return encoded }
                // The first state, or one of another type (a subclass): found as `any Encodable`.
                if let encodable = state as? any Encodable {
                    encoder = StateEncoder(encodable)
                    func open<Value: Encodable>(_ value: Value) throws -> InspectedValue {
                        try TreeEncoding.tree(of: value, previous: tree, trees: memberTrees)
                    }
                    return try open(encodable)
                }
            } catch {
                // Shown through reflection from now on, so that one store's states are comparable.
                reflected = true
                encodingFailure = "\(error)"
            }
        }
        reflected = true
        return Reflection.tree(of: state)
    }

    /// Forgets row `row` (dropped from the window), whose changes to this store were `changes`
    /// (`nil` when it did not change the store); `firstKept` is the number of the oldest row still
    /// kept.
    ///
    /// A row whose state was never encoded becomes the start: nothing is encoded for it.
    mutating func drop(row: Int, changes: [TreeChange]?, firstKept: Int) {
        if waitingCount > 0, waiting[waitingStart].row == row {
            let state = waiting[waitingStart].value
            waitingStart += 1
            restart(with: state, at: row + 1)
            // The states before `waitingStart` are let go, not kept until the page is written.
            if waitingStart == waiting.count {
                waiting = []
                waitingStart = 0
            } else if waitingStart >= 1_024, waitingStart * 2 >= waiting.count {
                waiting.removeFirst(waitingStart)
                waitingStart = 0
            }
            return
        }
        if let changes, isEncoded { hiddenChanges.append((row, changes)) }
        while keyframes.count > 1, keyframes[1].position <= firstKept {
            keyframes.removeFirst()
            let start = keyframes[0].position
            hiddenChanges.removeAll { $0.row < start }
        }
    }

    /// A rough size of what a value takes in the page, in bytes, counted up to `limit`.
    static func estimatedSize(of value: InspectedValue, limit: Int = 1 << 24) -> Int {
        switch value {
        case .null, .bool: return 5
        case .integer, .unsigned, .double: return 8
        case .string(let text), .text(let text): return text.utf8.count + 3
        case .node(let node):
            var size = 6
            for (index, member) in node.values.enumerated() {
                if index < node.keys.count { size += node.keys[index].utf8.count + 3 }
                size += estimatedSize(of: member, limit: limit - size)
                if size >= limit { return size }
            }
            return size
        }
    }

    static func estimatedSize(of change: TreeChange) -> Int {
        switch change {
        case .set(let container, _, let value): 16 + container.count * 8 + estimatedSize(of: value)
        case .remove(let container, _): 16 + container.count * 8
        case .splice(let container, _, _, let values):
            24 + container.count * 8 + values.reduce(0) { $0 + estimatedSize(of: $1) }
        case .replace(let value): 8 + estimatedSize(of: value)
        }
    }
}

/// Encodes the states of one `Encodable` type, found once: each state is then cast to that type
/// rather than looked up as `any Encodable`.
private struct StateEncoder {
    /// The tree of a state, given the previous tree and the store's trees of members met before;
    /// `nil` when the state is of another type.
    let tree: (any StateType, InspectedValue, MemberTrees) throws -> InspectedValue?

    init(_ first: any Encodable) {
        func make<Value: Encodable>(_: Value) -> (any StateType, InspectedValue, MemberTrees) throws -> InspectedValue?
        {
            { state, previous, trees in
                guard let value = state as? Value else { return nil }
                return try TreeEncoding.tree(of: value, previous: previous, trees: trees)
            }
        }
        tree = make(first)
    }
}
