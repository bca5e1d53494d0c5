import DispatchStore

/// One store as the inspector follows it: its latest state and tree, and what the page needs to
/// rebuild any of its states (keyframes, and the changes of dropped rows since the oldest one).
struct StoreTrack {
    let identifier: String
    var typeName: String
    var waitsFor: [String]
    /// Whether the states are shown through reflection (the state is not `Encodable`, or failed to
    /// encode).
    var reflected = false
    /// Why encoding failed, the first time it did.
    var encodingFailure: String?
    /// The latest state read: it keeps alive the buffers the tree's fingerprints refer to.
    private var value: (any StateType)?
    private(set) var tree: InspectedValue = .null
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

    /// Keyframes are at least this far apart, in bytes of changes.
    static let minimumKeyframeSpacing = 16_384

    init(identifier: String, typeName: String, waitsFor: [String]) {
        self.identifier = identifier
        self.typeName = typeName
        self.waitsFor = waitsFor
    }

    /// Whether a state was read yet.
    var hasState: Bool {
        value != nil
    }

    /// Takes the store's first state, as the state before the row numbered `position`.
    mutating func start(with state: any StateType, sequenceNumber: UInt64, at position: Int) {
        _ = capture(state, sequenceNumber: sequenceNumber)
        keyframes = [(position, tree)]
        hiddenChanges = []
        keyframeSize = Self.estimatedSize(of: tree)
        sinceKeyframe = 0
    }

    /// Takes a new state, read after the row numbered `row`: the changes from the previous one.
    mutating func record(_ state: any StateType, sequenceNumber: UInt64, row: Int) -> [TreeChange] {
        let changes = capture(state, sequenceNumber: sequenceNumber)
        sinceKeyframe += changes.reduce(0) { $0 + Self.estimatedSize(of: $1) }
        if sinceKeyframe >= max(keyframeSize, Self.minimumKeyframeSpacing) {
            keyframes.append((row + 1, tree))
            keyframeSize = Self.estimatedSize(of: tree)
            sinceKeyframe = 0
        }
        return changes
    }

    private mutating func capture(_ state: any StateType, sequenceNumber: UInt64) -> [TreeChange] {
        let next = makeTree(state)
        let changes = value == nil ? [] : TreeDiff.changes(from: tree, to: next)
        value = state
        tree = next
        self.sequenceNumber = sequenceNumber
        return changes
    }

    private mutating func makeTree(_ state: any StateType) -> InspectedValue {
        if !reflected, let encodable = state as? any Encodable {
            func open<Value: Encodable>(_ value: Value) throws -> InspectedValue {
                try TreeEncoding.tree(of: value, previous: tree)
            }
            do {
                return try open(encodable)
            } catch {
                // Shown through reflection from now on, so that one store's states are comparable.
                reflected = true
                encodingFailure = "\(error)"
            }
        }
        reflected = true
        return Reflection.tree(of: state)
    }

    /// Forgets row `row` (dropped from the window), whose changes to this store were `changes`;
    /// `firstKept` is the number of the oldest row still kept.
    mutating func drop(row: Int, changes: [TreeChange]?, firstKept: Int) {
        if let changes { hiddenChanges.append((row, changes)) }
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
