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
        "a burst reuses the runs of the batches before it, up to the busy limit, and an idle lane keeps only the idle limit",
        arguments: [1_000, 5_000]
    )
    func burstsReuseRuns(burst: Int) async throws {
        let fixture = try Fixture()
        let lane = fixture.lane
        #expect(Lane.idleSpareLimit < 1_000 && Lane.busySpareLimit < 5_000)
        // The lane waits for 'first' while the burst is queued behind it: one new run each.
        fixture.dispatcher.dispatch(CounterAction.increase, to: "first", mode: .serial)
        fixture.dispatchCounter(burst)
        fixture.dispatcher.dispatch(CounterAction.increase, to: "second", mode: .serial)
        #expect(lane.runCounts == (spare: 0, created: burst + 2))

        // The burst runs, then 'second' holds the lane up: the lane is not idle, so it keeps the
        // burst's runs, up to the busy limit (the run that waited for 'first' is not reused: a timer
        // or a finish hook may still refer to it).
        let kept = min(burst, Lane.busySpareLimit)
        fixture.first.open()
        #expect(await fixture.secondStarted.wait())
        // Once only 'second' is in flight, the drainer has handed back every run it finished.
        #expect(await eventually(seconds: 60) { lane.inFlightRuns == 1 })
        #expect(lane.runCounts == (spare: kept, created: burst + 2))

        // A second burst, queued behind 'second', takes them and creates only the rest.
        fixture.dispatchCounter(burst)
        #expect(lane.runCounts == (spare: 0, created: burst + 2 + (burst - kept)))

        // Before the lane is idle, it frees all but the idle limit.
        fixture.second.open()
        #expect(await fixture.dispatcher.waitForIdle(timeout: .seconds(600)))
        #expect(lane.runCounts == (spare: Lane.idleSpareLimit, created: burst + 2 + (burst - kept)))
        #expect(fixture.counter.state.count == 2 * burst)
    }

    @Test("the main lane keeps no more spare runs than an idle lane, even while it is busy")
    func mainLaneKeepsFew() throws {
        let fixture = try Fixture()
        let lane = fixture.dispatcher.engine.mainLane
        let burst = 1_000
        // The main queue is held while the burst is queued, so that every run of it is new.
        let (held, release) = (Gate(), Gate())
        DispatchQueue.main.async {
            held.open()
            release.wait()
        }
        #expect(held.wait())
        let lastDone = Gate()
        // 'first' waits for its gate: the main lane stays busy while the burst runs.
        fixture.dispatcher.dispatch(CounterAction.increase, to: "first", mode: .mainThread)
        for index in 0..<burst {
            fixture.dispatcher.dispatch(CounterAction.increase, to: "counter", mode: .mainThread) { _ in
                if index == burst - 1 { lastDone.open() }
            }
        }
        #expect(lane.runCounts == (spare: 0, created: burst + 1))
        release.open()
        #expect(lastDone.wait())
        // The main queue is serial: this runs once the drainer that ran the last run has returned.
        let drained = Gate()
        DispatchQueue.main.async { drained.open() }
        #expect(drained.wait())
        #expect(lane.runCounts == (spare: Lane.idleSpareLimit, created: burst + 1))
        fixture.first.open()
        #expect(fixture.dispatcher.waitUntilIdle(timeout: .seconds(600)))
        #expect(fixture.counter.state.count == burst)
    }

    /// A run's body keeps to 256 bytes.
    ///
    /// A run is one allocation: object header, body, mutex. Its flags sit in the padding after the
    /// transaction, and the deadline takes 8 bytes: a 320-byte block with glibc's `malloc` on Linux.
    @Test("a run's body keeps to 256 bytes on 64-bit platforms")
    func runBodySize() {
        guard MemoryLayout<Int>.size == 8 else { return }
        #expect(MemoryLayout<TransactionRun.Body>.size <= 256)
    }
}
