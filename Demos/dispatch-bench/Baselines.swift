import Foundation

/// The same trivial reducer the scenarios use, on a plain struct behind an `NSLock`.
final class LockedCounter: @unchecked Sendable {
    // @unchecked: `value` is only touched while holding `lock`.
    let lock = NSLock()
    var value = Counter()

    @inline(never)
    func update() {
        lock.lock()
        value.count &+= 1
        lock.unlock()
    }
}

/// A count only touched from one thread at a time (callbacks on the dispatching thread).
final class Tally: @unchecked Sendable {
    // @unchecked: the benchmark touches it from one thread at a time.
    var count = 0
}

func baselineScenarios(scale: Double) -> [Scenario] {
    let updates = scaled(1_000_000, scale)
    let callbackUpdates = scaled(100_000, scale)
    return [
        Scenario(
            id: "B1",
            summary: "baseline: a trivial reducer on a struct behind an NSLock",
            operations: updates,
            baseline: nil,
            target: nil
        ) {
            let counter = LockedCounter()
            return Repetition(
                run: {
                    for _ in 0..<updates {
                        counter.update()
                    }
                },
                check: { counter.value.count == updates ? nil : "count \(counter.value.count), expected \(updates)" }
            )
        },
        Scenario(
            id: "B2",
            summary: "baseline: B1 plus 1,000 plain closure callbacks per update",
            operations: callbackUpdates,
            baseline: nil,
            target: nil
        ) {
            let counter = LockedCounter()
            let tally = Tally()
            let callbacks: [(Counter) -> Void] = (0..<1_000).map { _ in { _ in tally.count &+= 1 } }
            return Repetition(
                run: {
                    for _ in 0..<callbackUpdates {
                        counter.update()
                        let state = counter.lock.withLock { counter.value }
                        for callback in callbacks {
                            callback(state)
                        }
                    }
                },
                check: {
                    tally.count == callbackUpdates * 1_000
                        ? nil : "callbacks \(tally.count), expected \(callbackUpdates * 1_000)"
                }
            )
        },
        Scenario(
            id: "B3",
            summary: "baseline: B1 plus 1,000 (select, compare, call back if changed) per update, 1 in 10 changed",
            operations: callbackUpdates,
            baseline: nil,
            target: nil
        ) {
            let lock = NSLock()
            var state = Counters()
            let tally = Tally()
            var last = (0..<1_000).map { state.values[$0 % 10] }
            let callbacks: [(Int) -> Void] = (0..<1_000).map { _ in { _ in tally.count &+= 1 } }
            return Repetition(
                run: {
                    for update in 0..<callbackUpdates {
                        lock.lock()
                        state.values[update % 10] &+= 1
                        let snapshot = state
                        lock.unlock()
                        for subscriber in 0..<1_000 {
                            let value = snapshot.values[subscriber % 10]
                            if value != last[subscriber] {
                                last[subscriber] = value
                                callbacks[subscriber](value)
                            }
                        }
                    }
                },
                check: {
                    tally.count == callbackUpdates * 100
                        ? nil : "callbacks \(tally.count), expected \(callbackUpdates * 100)"
                }
            )
        },
    ]
}

func scaled(_ count: Int, _ scale: Double) -> Int {
    max(1, Int((Double(count) * scale).rounded()))
}
