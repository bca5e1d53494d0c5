import Foundation
import TestSupport
import Testing

@testable import DispatchStore

@Suite("Lanes reuse their runs")
struct LaneRunPoolTests {
    /// Three stores: two whose operations wait for their own gate (each holds up the serial lane
    /// while it waits), and a counter reduced inline.
    private struct Fixture {
        let dispatcher = Dispatcher()
        let first = Gate()
        let second = Gate()
        let secondStarted = Gate()
        let counter = makeCounterStore("counter")

        init() throws {
            try dispatcher.register(store: makeCounterStore("first", reducer: GatedCounterReducer(gate: first)))
            try dispatcher.register(
                store: makeCounterStore("second", reducer: GatedCounterReducer(gate: second, started: secondStarted))
            )
            try dispatcher.register(store: counter)
        }

        var lane: Lane { dispatcher.engine.serialLane }

        func dispatchCounter(_ count: Int) {
            for _ in 0..<count {
                dispatcher.dispatch(CounterAction.increase, to: "counter", mode: .serial)
            }
        }
    }

    @Test(
        "a burst larger than the idle limit reuses every run of the batches before it, and an idle lane keeps only the limit"
    )
    func burstsReuseRuns() async throws {
        let fixture = try Fixture()
        let lane = fixture.lane
        let burst = 1_000
        #expect(burst > Lane.idleSpareLimit)
        // The lane waits for 'first' while the burst is queued behind it: one new run each.
        fixture.dispatcher.dispatch(CounterAction.increase, to: "first", mode: .serial)
        fixture.dispatchCounter(burst)
        fixture.dispatcher.dispatch(CounterAction.increase, to: "second", mode: .serial)
        #expect(lane.runCounts == (spare: 0, created: burst + 2))

        // The burst runs, then 'second' holds the lane up: the lane is not idle, so it keeps the
        // burst's runs (the run that waited for 'first' is not reused: a timer or hook may refer to it).
        fixture.first.open()
        #expect(await fixture.secondStarted.wait())
        #expect(await eventually(seconds: 60) { lane.runCounts.spare == burst })

        // A second burst, queued behind 'second', takes them all and creates none.
        fixture.dispatchCounter(burst)
        #expect(lane.runCounts == (spare: 0, created: burst + 2))

        // Once the lane is idle, it keeps only the idle limit.
        fixture.second.open()
        #expect(await fixture.dispatcher.waitForIdle(timeout: .seconds(600)))
        #expect(lane.runCounts == (spare: Lane.idleSpareLimit, created: burst + 2))
        #expect(fixture.counter.state.count == 2 * burst)
    }
}
