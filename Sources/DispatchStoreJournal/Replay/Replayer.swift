import DispatchStore

/// Replays log entries into a dispatcher, giving every store its actions in its own sequence
/// order, whatever the order of the lines.
///
/// Each store has a lane: the next number it expects. An entry is applied to a store when its
/// number for that store is the next one; a later number is held back until the ones before it
/// arrive. An entry that every store it names expects now, and that a plain dispatch would route to
/// exactly those stores, is dispatched once (so `waitsFor` orders it as it did live); otherwise it
/// goes to each store alone (`to:`), in the logged order. Everything is dispatched `.sync`.
///
/// A store stops (applies nothing more) at a missing number, at a number given twice, or when it
/// does not apply an action as the log says; each is reported once, naming the store and the line.
/// Digests in the log are compared when their store reaches their number; the first mismatch per
/// store is reported.
final class Replayer {
    /// What the replay found.
    struct Outcome {
        var replayed = 0
        /// Entries every store of which already had (their numbers are within the starting state).
        var covered = 0
        var mismatchedLines: [Int] = []
        var divergences: [ActionLogError] = []
        var checksumsVerified = 0
    }

    private final class Held {
        let entry: ActionLog.Entry
        var remaining: Int

        init(entry: ActionLog.Entry, remaining: Int) {
            self.entry = entry
            self.remaining = remaining
        }
    }

    private struct Lane {
        let store: any AnyStore
        /// The number up to which the starting state already includes the actions.
        let base: UInt64
        var next: UInt64
        var held: [UInt64: Held] = [:]
        var stopped = false
        var checks: [UInt64: (digest: UInt64, line: Int)] = [:]
        var mismatchReported = false
    }

    private let dispatcher: Dispatcher
    /// The log being read, for messages; a journal sets it for each of its files.
    var path: String
    private let window: Int
    private var lanes: [Lane] = []
    private var laneIndex: [String: Int] = [:]
    private var routes: [ObjectIdentifier: [Int]] = [:]
    private var unknownReported: Set<String> = []
    private var heldCount = 0
    private var mismatched: Set<Int> = []
    /// Where each dispatch's completion leaves its result, and that completion, made once.
    private let result = LockedBox<DispatchResult?>(nil)
    private let capture: @Sendable (DispatchResult) -> Void
    private(set) var outcome = Outcome()
    /// Told of each entry before it is dispatched and of each digest compared (the inspector).
    let observer = ReplayObservation.observer

    /// Prepares a replay into `dispatcher`'s registered stores.
    ///
    /// - Parameters:
    ///   - dispatcher: The dispatcher to replay into.
    ///   - path: The log, for messages.
    ///   - window: The most (store, line) pairs held back waiting for an earlier number; past it,
    ///     the store waiting longest is declared to have a gap.
    ///   - base: Per store, the number its state already includes (from a snapshot); 0 if absent.
    init(dispatcher: Dispatcher, path: String, window: Int, base: [String: UInt64] = [:]) {
        self.dispatcher = dispatcher
        self.path = path
        self.window = max(window, 1)
        capture = { [result] outcome in result.withLockedValue { $0 = outcome } }
        for store in dispatcher.stores {
            let start = base[store.identifier] ?? 0
            laneIndex[store.identifier] = lanes.count
            lanes.append(Lane(store: store, base: start, next: start + 1))
        }
    }

    /// Replays one entry (or holds it back).
    func feed(_ entry: ActionLog.Entry) {
        guard !entry.sequenceNumbers.isEmpty else {
            replayInFileOrder(entry)
            return
        }
        var ready: [(lane: Int, number: UInt64)] = []
        var later: [(lane: Int, number: UInt64)] = []
        var skipped = false
        for (index, identifier) in entry.storeIdentifiers.enumerated() {
            guard let lane = lane(for: identifier, entry) else {
                skipped = true
                continue
            }
            let number = entry.sequenceNumbers[index]
            if lanes[lane].stopped || number <= lanes[lane].base {
                skipped = true
            } else if number < lanes[lane].next || lanes[lane].held[number] != nil {
                stop(lane, .duplicate(identifier, number, line: entry.line, path: path))
                skipped = true
            } else if number == lanes[lane].next {
                ready.append((lane, number))
            } else {
                later.append((lane, number))
            }
        }
        guard !ready.isEmpty || !later.isEmpty else {
            if entry.storeIdentifiers.indices.allSatisfy({ index in
                laneIndex[entry.storeIdentifiers[index]].map { entry.sequenceNumbers[index] <= lanes[$0].base } ?? false
            }) {
                outcome.covered += 1
            }
            return
        }
        var held: Held?
        if !later.isEmpty {
            let waiting = Held(entry: entry, remaining: ready.count + later.count)
            for (lane, number) in later {
                lanes[lane].held[number] = waiting
                heldCount += 1
            }
            held = waiting
        }
        var applied = 0
        if later.isEmpty && !skipped && entry.targetIdentifier == nil && routesMatch(entry, ready) {
            applied = apply(entry, to: ready, together: true)
        } else {
            for item in ready {
                applied += apply(entry, to: [item], together: false)
            }
        }
        if let held {
            held.remaining -= applied
            if held.remaining == 0 { outcome.replayed += 1 }
        } else if applied == ready.count {
            outcome.replayed += 1
        }
        for item in ready {
            drain(item.lane)
        }
        while heldCount > window {
            declareGapInLongestWait()
        }
    }

    /// Records digests to compare when their stores reach their numbers.
    func feed(checks: [ActionRecord.Check], line: Int) {
        for check in checks {
            guard let lane = laneIndex[check.storeIdentifier], !lanes[lane].stopped,
                check.sequenceNumber > lanes[lane].base
            else { continue }
            if check.sequenceNumber == lanes[lane].next - 1 {
                verify(lane, digest: check.digest, line: line)
            } else if check.sequenceNumber >= lanes[lane].next {
                lanes[lane].checks[check.sequenceNumber] = (check.digest, line)
            }
        }
    }

    /// Ends the replay: stores still waiting for a number have a gap at the end of the log.
    func finish() -> Outcome {
        for lane in lanes.indices where !lanes[lane].held.isEmpty && !lanes[lane].stopped {
            let first = lanes[lane].held.keys.min()!
            let line = lanes[lane].held[first]!.entry.line
            stop(
                lane,
                .gap(lanes[lane].store.identifier, missing: lanes[lane].next, laterLine: line, atEnd: true, path: path)
            )
        }
        outcome.mismatchedLines = mismatched.sorted()
        return outcome
    }

    /// The sequence number each store reached.
    var sequenceNumbers: [String: UInt64] {
        Dictionary(uniqueKeysWithValues: lanes.map { ($0.store.identifier, $0.next - 1) })
    }

    // MARK: Applying

    private func lane(for identifier: String, _ entry: ActionLog.Entry) -> Int? {
        if let lane = laneIndex[identifier], lanes[lane].store.actionType == type(of: entry.action) { return lane }
        if unknownReported.insert(identifier).inserted {
            outcome.divergences.append(.unknownStore(identifier, line: entry.line, path: path, action: entry.action))
        }
        return nil
    }

    /// Whether a plain dispatch of the entry's action reaches exactly the lanes in `ready`.
    private func routesMatch(_ entry: ActionLog.Entry, _ ready: [(lane: Int, number: UInt64)]) -> Bool {
        let type = Swift.type(of: entry.action)
        let key = ObjectIdentifier(type)
        let route: [Int]
        if let known = routes[key] {
            route = known
        } else {
            route = lanes.indices.filter { lanes[$0].store.actionType == type }
            routes[key] = route
        }
        return route.count == ready.count && ready.allSatisfy { route.contains($0.lane) }
    }

    /// Dispatches `entry`'s action to the lanes in `items`, in one dispatch when `together`.
    ///
    /// - Returns: How many of them applied it as the log says (the others stopped).
    private func apply(_ entry: ActionLog.Entry, to items: [(lane: Int, number: UInt64)], together: Bool) -> Int {
        observer?.replayWillApply(entry, from: path)
        let result = dispatch(entry.action, to: together ? nil : lanes[items[0].lane].store.identifier)
        var applied = 0
        for (lane, number) in items {
            let identifier = lanes[lane].store.identifier
            let outcome = result.outcomes.first { $0.storeIdentifier == identifier }
            guard let sequenceNumber = outcome?.sequenceNumber, sequenceNumber == number else {
                stop(lane, .notApplied(identifier, number, as: outcome?.sequenceNumber, line: entry.line, path: path))
                continue
            }
            lanes[lane].next = number + 1
            let loggedSucceeded = entry.unfinishedStores.isEmpty || !entry.unfinishedStores.contains(identifier)
            if outcome?.status.isSuccessful != loggedSucceeded { mismatched.insert(entry.line) }
            if !lanes[lane].checks.isEmpty, let check = lanes[lane].checks.removeValue(forKey: number) {
                verify(lane, digest: check.digest, line: check.line)
            }
            applied += 1
        }
        if !entry.checks.isEmpty { feed(checks: entry.checks, line: entry.line) }
        return applied
    }

    /// Applies the held entries that `lane` now expects, one after the other.
    private func drain(_ lane: Int) {
        while !lanes[lane].stopped, !lanes[lane].held.isEmpty,
            let held = lanes[lane].held.removeValue(forKey: lanes[lane].next)
        {
            heldCount -= 1
            held.remaining -= apply(held.entry, to: [(lane, lanes[lane].next)], together: false)
            if held.remaining == 0 { outcome.replayed += 1 }
        }
    }

    private func dispatch(_ action: any ActionType, to identifier: String?) -> DispatchResult {
        func open<Action: ActionType>(_ action: Action) {
            dispatcher.dispatch(action, to: identifier, mode: .sync, then: capture)
        }
        open(action)
        // `.sync` runs the completion before `dispatch` returns.
        return result.withLockedValue { result in
            defer { result = nil }
            return result!
        }
    }

    /// The old way, for lines without sequence numbers: one dispatch per line, in file order.
    private func replayInFileOrder(_ entry: ActionLog.Entry) {
        let logged = entry.storeIdentifiers
        var handled: [String] = []
        var clean = true
        let lanesLogged = logged.compactMap { laneIndex[$0] }.map { (lane: $0, number: UInt64(0)) }
        observer?.replayWillApply(entry, from: path)
        if entry.targetIdentifier == nil && lanesLogged.count == logged.count && routesMatch(entry, lanesLogged) {
            let result = dispatch(entry.action, to: nil)
            handled = result.handledStores
            clean = result.succeeded
        } else {
            for identifier in logged {
                let result = dispatch(entry.action, to: identifier)
                handled += result.handledStores
                clean = clean && result.succeeded
            }
        }
        if !clean || handled != logged { mismatched.insert(entry.line) }
        outcome.replayed += 1
    }

    // MARK: Problems

    private func verify(_ lane: Int, digest: UInt64, line: Int) {
        guard let actual = lanes[lane].store.stateDigest else { return }
        observer?.replayDidVerify(
            storeIdentifier: actual.storeIdentifier,
            sequenceNumber: actual.sequenceNumber,
            line: line,
            path: path,
            matches: actual.digest == digest
        )
        if actual.digest == digest {
            outcome.checksumsVerified += 1
        } else if !lanes[lane].mismatchReported {
            lanes[lane].mismatchReported = true
            outcome.divergences.append(
                .checksumMismatch(lanes[lane].store.identifier, actual.sequenceNumber, line: line, path: path)
            )
        }
    }

    private func stop(_ lane: Int, _ problem: ActionLogError) {
        outcome.divergences.append(problem)
        lanes[lane].stopped = true
        heldCount -= lanes[lane].held.count
        lanes[lane].held = [:]
    }

    private func declareGapInLongestWait() {
        let waiting = lanes.indices.filter { !lanes[$0].held.isEmpty }
        guard let lane = waiting.max(by: { lanes[$0].held.count < lanes[$1].held.count }) else { return }
        let first = lanes[lane].held.keys.min()!
        let line = lanes[lane].held[first]!.entry.line
        stop(
            lane,
            .gap(lanes[lane].store.identifier, missing: lanes[lane].next, laterLine: line, atEnd: false, path: path)
        )
    }
}
