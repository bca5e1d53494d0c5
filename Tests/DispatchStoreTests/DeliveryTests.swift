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
    func crossDispatchUnderLoad() throws {
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
        DispatchQueue.concurrentPerform(iterations: 2) { thread in
            let identifier = thread == 0 ? "left" : "right"
            for index in 1...perThread {
                let tag = thread * perThread + index
                dispatcher.dispatch(TaggedAction.add(tag: tag, echo: true), to: identifier, mode: .sync)
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
