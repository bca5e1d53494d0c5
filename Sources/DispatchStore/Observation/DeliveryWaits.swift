import Foundation

/// The threads waiting for another thread to deliver a store's changes, and the stores they wait
/// for: one per process, touched only when a delivery has to wait inside an observer callback.
///
/// A thread that commits a change from inside an observer callback (a `.sync` dispatch, an
/// `updateState`) must not return before that change's observers ran. When another thread is
/// delivering the store, it waits; but that thread may itself be waiting, inside an observer, for
/// a store this one is delivering. So a waiting thread helps: it delivers the pending changes of
/// every store someone waits for and whose delivery it can take (its own, re-entrantly, or a free
/// one), then sleeps until a delivery it waits for progresses or a new wait begins. A cycle of
/// waits thereby always unwinds: each thread in it delivers what the next one waits for.
final class DeliveryWaits: Sendable {
    private let state = LockedBox(State())

    private struct State {
        /// The stores waited for, with how many threads wait for each.
        var awaited: [ObjectIdentifier: (store: any StoreEntry, waiters: Int)] = [:]
        /// The waiters asleep until the next event, each woken through its own semaphore.
        var sleepers: [DispatchSemaphore] = []
        /// Bumped on every event a waiter may be waiting for; a waiter sleeps only while it is
        /// unchanged since it last looked.
        var epoch: UInt64 = 0

        /// Records an event and hands back the sleepers to wake, outside the lock.
        mutating func advance() -> [DispatchSemaphore] {
            epoch &+= 1
            defer { sleepers = [] }
            return sleepers
        }
    }

    /// The one instance.
    static let shared = DeliveryWaits()

    /// Waits until `isDone` holds, helping deliver the stores other threads wait for meanwhile.
    ///
    /// - Parameters:
    ///   - store: The store whose delivery the caller waits for; registered as awaited while it waits.
    ///   - isDone: Whether the caller's changes were delivered (or it delivered them itself).
    func wait(for store: any StoreEntry, until isDone: () -> Bool) {
        let key = ObjectIdentifier(store)
        let woken = state.withLockedValue { state in
            state.awaited[key, default: (store, 0)].waiters += 1
            return state.advance()
        }
        Self.wake(woken)
        defer {
            state.withLockedValue { state in
                if let entry = state.awaited[key] {
                    state.awaited[key] = entry.waiters == 1 ? nil : (entry.store, entry.waiters - 1)
                }
            }
        }
        let sleeper = DispatchSemaphore(value: 0)
        while true {
            let (epoch, awaited) = state.withLockedValue { ($0.epoch, $0.awaited.values.map(\.store)) }
            for candidate in awaited {
                candidate.deliverPendingChangesIfFree()
            }
            if isDone() { return }
            let sleeps = state.withLockedValue { state in
                guard state.epoch == epoch else { return false }
                state.sleepers.append(sleeper)
                return true
            }
            if sleeps { sleeper.wait() }
        }
    }

    /// Wakes the waiters: a delivery progressed or ended.
    func wake() {
        Self.wake(state.withLockedValue { $0.advance() })
    }

    private static func wake(_ sleepers: [DispatchSemaphore]) {
        for sleeper in sleepers {
            sleeper.signal()
        }
    }
}
