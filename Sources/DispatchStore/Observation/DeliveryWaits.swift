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
final class DeliveryWaits: @unchecked Sendable {
    // @unchecked: `state` is only touched while holding `condition`'s lock.
    private let condition = NSCondition()
    private var state = State()

    private struct State {
        /// Bumped on every event a waiter may be waiting for; a waiter sleeps only while it is
        /// unchanged since it last looked.
        var epoch: UInt64 = 0
        /// The stores waited for, with how many threads wait for each.
        var awaited: [ObjectIdentifier: (store: any StoreEntry, waiters: Int)] = [:]
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
        condition.lock()
        state.awaited[key, default: (store, 0)].waiters += 1
        advance()
        condition.unlock()
        defer {
            condition.lock()
            if let entry = state.awaited[key] {
                state.awaited[key] = entry.waiters == 1 ? nil : (entry.store, entry.waiters - 1)
            }
            condition.unlock()
        }
        while true {
            condition.lock()
            let epoch = state.epoch
            let awaited = state.awaited.values.map(\.store)
            condition.unlock()
            for candidate in awaited {
                candidate.deliverPendingChangesIfFree()
            }
            if isDone() { return }
            condition.lock()
            while state.epoch == epoch {
                condition.wait()
            }
            condition.unlock()
        }
    }

    /// Wakes the waiters: a delivery progressed or ended.
    func wake() {
        condition.lock()
        advance()
        condition.unlock()
    }

    private func advance() {
        state.epoch &+= 1
        condition.broadcast()
    }
}
