import DispatchStore
import Foundation
import TestSupport
import Testing

/// An action that remembers who sent it, so that observers can tell their changes apart.
enum TaggedAction: ActionType, Equatable {
    /// `tag` identifies the dispatch; `echo` asks the other store's observer to dispatch back.
    case add(tag: Int, echo: Bool)
}

struct TagLog: StateType, Equatable {
    var tags: [Int] = []
}

final class TagReducer: Reducer<TagLog, TaggedAction> {
    /// Called inside the reduction, under the store's lock.
    let onReduce: (@Sendable (Int) -> Void)?

    init(onReduce: (@Sendable (Int) -> Void)? = nil) {
        self.onReduce = onReduce
    }

    override func reduce(_ action: TaggedAction, into state: inout TagLog) {
        guard case .add(let tag, _) = action else { return }
        state.tags.append(tag)
        onReduce?(tag)
    }
}

@Suite("Delivery: .sync returns after its observers ran")
struct DeliveryTests {
    @Test(
        ".sync from an observer waits while another thread delivers the target store, then returns after its observers"
    )
    func syncWaitsForOtherDeliverer() throws {
        let dispatcher = Dispatcher()
        // The second change to `target` opens the gate that holds the first change's delivery.
        let holding = Gate()
        let release = Gate()
        let target = Store<TagLog, TaggedAction>(
            identifier: "target",
            reducer: TagReducer { tag in if tag == 2 { release.open() } }
        )
        let source = makeCounterStore("source")
        try dispatcher.register(store: target)
        try dispatcher.register(store: source)
        let delivered = Shared<[Int]>([])
        let targetObserver = target.subscribe { state, _ in
            if state.tags == [1] {
                holding.open()
                _ = release.wait()
            }
            delivered.withLock { $0 = state.tags }
        }
        let seenOnReturn = Shared<[Int]?>(nil)
        let sourceObserver = source.subscribe { _, _ in
            _ = holding.wait()
            // Another thread is inside `target`'s delivery: this change is queued behind it.
            dispatcher.dispatch(TaggedAction.add(tag: 2, echo: false), to: "target", mode: .sync)
            seenOnReturn.withLock { $0 = delivered.current }
        }
        let other = Gate()
        Thread.detachNewThread {
            dispatcher.dispatch(TaggedAction.add(tag: 1, echo: false), to: "target", mode: .sync)
            other.open()
        }

        dispatcher.dispatch(CounterAction.increase, mode: .sync)

        #expect(seenOnReturn.current == [1, 2])
        #expect(other.wait())
        _ = (targetObserver, sourceObserver)
    }

    @Test(
        "two threads delivering two stores and dispatching .sync into each other: no deadlock, every change seen on return"
    )
    func crossDispatchUnderLoad() async throws {
        let dispatcher = Dispatcher()
        let left = Store<TagLog, TaggedAction>(identifier: "left", reducer: TagReducer())
        let right = Store<TagLog, TaggedAction>(identifier: "right", reducer: TagReducer())
        try dispatcher.register(store: left)
        try dispatcher.register(store: right)
        let seen = ["left": Shared<Set<Int>>([]), "right": Shared<Set<Int>>([])]
        let late = Shared(0)
        var subscriptions: [Subscription] = []
        for (store, other) in [(left, "right"), (right, "left")] {
            subscriptions.append(
                store.subscribe { _, action in
                    guard case .add(let tag, let echo)? = action else { return }
                    seen[store.identifier]?.withLock { _ = $0.insert(tag) }
                    guard echo else { return }
                    let reply = -tag
                    dispatcher.dispatch(TaggedAction.add(tag: reply, echo: false), to: other, mode: .sync)
                    if seen[other]?.current.contains(reply) != true { late.increment() }
                }
            )
        }
        let perThread = 2_000
        // On threads of their own: the test pool's threads stay free for the other tests.
        await offThePool {
            concurrently(2) { thread in
                let identifier = thread == 0 ? "left" : "right"
                for index in 1...perThread {
                    let tag = thread * perThread + index
                    dispatcher.dispatch(TaggedAction.add(tag: tag, echo: true), to: identifier, mode: .sync)
                }
            }
        }

        #expect(late.current == 0, "a .sync dispatch returned before its observers ran")
        #expect(left.state.tags.count == 2 * perThread)
        #expect(right.state.tags.count == 2 * perThread)
        #expect(seen["left"]?.current.count == 2 * perThread)
        #expect(seen["right"]?.current.count == 2 * perThread)
        _ = subscriptions
    }
}

/// An object a state holds, which says when it is freed.
final class LifetimeMarker: Sendable {
    let tag: Int
    private let freed: Shared<Set<Int>>

    init(tag: Int, freed: Shared<Set<Int>>) {
        self.tag = tag
        self.freed = freed
    }

    deinit {
        freed.withLock { _ = $0.insert(tag) }
    }
}

/// A state holding buffers (an array, a string) and an object only the state holds.
struct MarkedLog: StateType {
    var tags: [Int] = []
    var title = ""
    var marker: LifetimeMarker?
}

/// Appends its tag, and gives the state a new marker and title.
struct Stamp: ActionType {
    let tag: Int
    let note: String
}

final class StampReducer: Reducer<MarkedLog, Stamp> {
    let freed: Shared<Set<Int>>

    init(freed: Shared<Set<Int>>) {
        self.freed = freed
    }

    override func reduce(_ action: Stamp, into state: inout MarkedLog) {
        state.tags.append(action.tag)
        state.title = String(repeating: "change \(action.tag) ", count: 4)
        state.marker = LifetimeMarker(tag: action.tag, freed: freed)
    }
}

@Suite("Delivery: every observer of a change is lent that change's state")
struct LentStateTests {
    @Test(
        "an observer that dispatches .sync into its own store keeps the state and action it was called with, alive"
    )
    func nestedDeliveryKeepsTheOuterChange() throws {
        let dispatcher = Dispatcher()
        let freed = Shared<Set<Int>>([])
        let store = Store<MarkedLog, Stamp>(identifier: "log", reducer: StampReducer(freed: freed))
        try dispatcher.register(store: store)
        let afterNested = Shared<(tags: [Int], title: String, marker: Int?, note: String?, freed: Set<Int>)?>(nil)
        let calls = Shared<[String]>([])
        let first = store.subscribe { state, action in
            calls.withLock { $0.append("first \(state.tags)") }
            guard action?.tag == 1 else { return }
            // Delivers change 2 to every observer, and ends change 1, before it returns.
            dispatcher.dispatch(Stamp(tag: 2, note: "second"), mode: .sync)
            let seen = (state.tags, state.title, state.marker?.tag, action?.note, freed.current)
            afterNested.withLock { $0 = seen }
        }
        let second = store.subscribe { state, action in
            calls.withLock { $0.append("second \(state.tags) \(action?.note ?? "-")") }
        }

        dispatcher.dispatch(Stamp(tag: 1, note: "first"), mode: .sync)

        let seen = try #require(afterNested.current)
        #expect(seen.tags == [1])
        #expect(seen.title == String(repeating: "change 1 ", count: 4))
        #expect(seen.marker == 1)
        #expect(seen.note == "first")
        // The store's state moved on to marker 2: only change 1 still held marker 1.
        #expect(!seen.freed.contains(1), "change 1 was freed while an observer was still being called with it")
        #expect(freed.current == [1])
        #expect(calls.current == ["first [1]", "second [1] first", "first [1, 2]", "second [1, 2] second"])
        _ = (first, second)
    }
}

@Suite("Subscriptions made while changes wait for delivery")
struct LateSubscriptionTests {
    /// A store whose first change's delivery is held in an observer, with changes 2 and 3 queued
    /// behind it by other threads; `body` runs then, and the delivery goes on when it returns.
    private func withChangesQueued(
        prepare: (Store<TagLog, TaggedAction>) -> Void = { _ in },
        _ body: (Store<TagLog, TaggedAction>, Dispatcher) throws -> Void
    ) throws {
        let dispatcher = Dispatcher()
        let reduced = [Gate(), Gate(), Gate(), Gate()]
        let store = Store<TagLog, TaggedAction>(
            identifier: "tags",
            reducer: TagReducer { tag in if tag < reduced.count { reduced[tag].open() } }
        )
        try dispatcher.register(store: store)
        let holding = Gate()
        let release = Gate()
        let holder = store.subscribe { state, _ in
            if state.tags == [1] {
                holding.open()
                _ = release.wait()
            }
        }
        prepare(store)
        let finished = Countdown(3)
        for tag in 1...3 {
            Thread.detachNewThread {
                dispatcher.dispatch(TaggedAction.add(tag: tag, echo: false), mode: .sync)
                finished.tick()
            }
            // One at a time, so that the changes queue in tag order.
            #expect(reduced[tag].wait())
            if tag == 1 { #expect(holding.wait()) }
        }
        try body(store, dispatcher)
        release.open()
        #expect(finished.wait())
        _ = holder
    }

    @Test("a new key-path subscription receives no value older than the state it subscribed to")
    func newGroupSkipsOlderChanges() throws {
        let received = Shared<[Int]>([])
        var subscription: Subscription?
        try withChangesQueued { store, _ in
            #expect(store.state.tags == [1, 2, 3])
            subscription = store.subscribe(\.tags.count) { count in received.append(count) }
        }
        // Changes 2 and 3 were queued before it: 2 is older than what it saw, 3 is what it saw.
        #expect(received.current == [])
        subscription?.cancel()
    }

    @Test("joining an existing key-path group, a subscription receives only changes committed after it")
    func joinedGroupSkipsOlderChanges() throws {
        let early = Shared<[Int]>([])
        let late = Shared<[Int]>([])
        var subscriptions: [Subscription] = []
        var dispatcher: Dispatcher?
        try withChangesQueued(
            prepare: { store in
                // Before any change: the group exists and follows every change.
                subscriptions.append(store.subscribe(\.tags.count) { count in early.append(count) })
            },
            { store, owner in
                dispatcher = owner
                subscriptions.append(store.subscribe(\.tags.count) { count in late.append(count) })
            }
        )
        dispatcher?.dispatch(TaggedAction.add(tag: 4, echo: false), mode: .sync)
        #expect(early.current == [1, 2, 3, 4])
        #expect(late.current == [4])
        for subscription in subscriptions { subscription.cancel() }
    }

    @Test("a whole-state subscription and a state stream start after the changes already queued")
    func wholeStateSkipsOlderChanges() async throws {
        let received = Shared<[[Int]]>([])
        var subscription: Subscription?
        var stream: AsyncStream<TagLog>?
        var owner: Dispatcher?
        try withChangesQueued { store, dispatcher in
            owner = dispatcher
            subscription = store.subscribe { state, _ in received.append(state.tags) }
            stream = store.states()
        }
        owner?.dispatch(TaggedAction.add(tag: 4, echo: false), mode: .sync)
        #expect(received.current == [[1, 2, 3, 4]])
        var iterator = try #require(stream).makeAsyncIterator()
        #expect(await iterator.next()?.tags == [1, 2, 3])
        #expect(await iterator.next()?.tags == [1, 2, 3, 4])
        subscription?.cancel()
    }
}

@Suite("Subscriptions at scale")
struct SubscriptionScaleTests {
    @Test(
        "10,000 subscriptions, 9,000 cancelled in a scattered order: one dispatch calls exactly the 1,000 left, in order"
    )
    func cancelMost() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let calls = Shared<[Int]>([])
        var subscriptions = (0..<10_000).map { index in
            store.subscribe { _, _ in calls.append(index) } as Subscription?
        }
        var kept: [Int] = []
        for index in subscriptions.indices {
            if index % 10 == 7 {
                kept.append(index)
            } else {
                subscriptions[index]?.cancel()
                subscriptions[index] = nil
            }
        }

        dispatcher.dispatch(CounterAction.increase, mode: .sync)

        #expect(calls.current == kept)
        _ = subscriptions
    }

    @Test("key-path groups left without members start over from the value at the next subscription")
    func emptiedGroupStartsOver() throws {
        let dispatcher = Dispatcher()
        let store = makeCounterStore()
        try dispatcher.register(store: store)
        let first = store.subscribe(\.count) { _ in }
        first.cancel()
        // The group followed no change since: a new subscriber must not compare with its old value.
        dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        let received = Shared<[Int]>([])
        let second = store.subscribe(\.count) { count in received.append(count) }
        store.updateState { $0.count = 0 }
        dispatcher.dispatch(CounterAction.add(5), mode: .sync)
        #expect(received.current == [0, 5])
        second.cancel()
    }
}
