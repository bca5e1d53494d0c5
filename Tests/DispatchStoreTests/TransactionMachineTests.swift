import TestSupport
import Testing

@testable import DispatchStore

/// A machine over steps this test owns.
private struct Harness: ~Copyable {
    let steps: UnsafeMutablePointer<TransactionMachine.Step>
    var machine: TransactionMachine

    init(count: Int, reportsNeedWork: Bool = false, cancelled: Bool = false) {
        steps = .allocate(capacity: max(count, 1))
        machine = TransactionMachine(steps: steps, count: count, reportsNeedWork: reportsNeedWork, cancelled: cancelled)
    }

    deinit {
        steps.deallocate()
    }
}

@Suite("The transaction state machine")
struct TransactionMachineTests {
    @Test("a step that finishes at once: start, then finish, with nothing to report")
    func inlineStep() {
        var harness = Harness(count: 1)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        #expect(harness.machine.started(0, ending: .succeeded, needsDelivery: false) == false)
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.isFinished)
        #expect(harness.machine.ending(of: 0) == .succeeded)
    }

    @Test("a step with changes to deliver is reported, then the transaction finishes")
    func deliveryIsReported() {
        var harness = Harness(count: 1)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        _ = harness.machine.started(0, ending: .succeeded, needsDelivery: true)
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
    }

    @Test("with middleware every step is reported, delivery or not")
    func middlewareReportsEveryStep() {
        var harness = Harness(count: 2, reportsNeedWork: true)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        _ = harness.machine.started(0, ending: .succeeded, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .start(1))
        _ = harness.machine.started(1, ending: .failed, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: nil) == .report(1, announce: false, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.ending(of: 1) == .failed)
    }

    @Test("a running step suspends the run; its finish resumes it exactly once")
    func suspendAndResume() {
        var harness = Harness(count: 1)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        #expect(harness.machine.started(0, ending: nil, needsDelivery: false) == false)
        #expect(harness.machine.next(waitsFor: nil) == .suspend)
        #expect(!harness.machine.isDriving)
        #expect(harness.machine.finished(0, ending: .succeeded) == .resume)
        #expect(harness.machine.isDriving)
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
    }

    @Test("a step that finishes on another thread while the run is still driven does not resume it twice")
    func finishWhileDriving() {
        var harness = Harness(count: 1)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        // The operation's finish arrives before the driver recorded how it started.
        #expect(harness.machine.finished(0, ending: .succeeded) == .none)
        #expect(harness.machine.started(0, ending: nil, needsDelivery: false) == false)
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
    }

    @Test("independent steps start while one runs; a waiting step starts once its dependency is reported")
    func dependencies() {
        // Step 2 waits for step 0; step 1 waits for nothing.
        let table = WaitsForTable([[], [], [0]])
        defer { withExtendedLifetime(table) {} }
        let waitsFor = table.view
        var harness = Harness(count: 3)
        #expect(harness.machine.next(waitsFor: waitsFor) == .start(0))
        _ = harness.machine.started(0, ending: nil, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: waitsFor) == .start(1))
        _ = harness.machine.started(1, ending: .succeeded, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: waitsFor) == .suspend)
        #expect(harness.machine.finished(0, ending: .succeeded) == .resume)
        #expect(harness.machine.next(waitsFor: waitsFor) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: waitsFor) == .start(2))
        _ = harness.machine.started(2, ending: .succeeded, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: waitsFor) == .finish)
    }

    @Test("a step whose dependency failed or was cancelled is skipped, and announced when reported")
    func failedDependencySkips() {
        let table = WaitsForTable([[], [0]])
        defer { withExtendedLifetime(table) {} }
        let waitsFor = table.view
        for ending in [TransactionMachine.Ending.failed, .cancelled] {
            var harness = Harness(count: 2)
            #expect(harness.machine.next(waitsFor: waitsFor) == .start(0))
            _ = harness.machine.started(0, ending: ending, needsDelivery: false)
            #expect(harness.machine.next(waitsFor: waitsFor) == .report(1, announce: true, deliver: false))
            #expect(harness.machine.next(waitsFor: waitsFor) == .finish)
            #expect(harness.machine.ending(of: 1) == .cancelled)
        }
    }

    @Test("a transaction cancelled before it starts skips every step")
    func startsCancelled() {
        var harness = Harness(count: 2, cancelled: true)
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: true, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .report(1, announce: true, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.ending(of: 0) == .cancelled)
    }

    @Test("cancelling against a running step: the step is to be cancelled, the rest skipped")
    func cancelWhileRunning() {
        var harness = Harness(count: 2)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        _ = harness.machine.started(0, ending: nil, needsDelivery: false)
        #expect(harness.machine.cancel() == [0])
        #expect(harness.machine.cancel() == nil, "a second cancel has no effect")
        #expect(harness.machine.next(waitsFor: nil) == .report(1, announce: true, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .suspend)
        #expect(harness.machine.finished(0, ending: .cancelled) == .resume)
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
    }

    @Test("cancelling while a step starts: starting then says to cancel its operation")
    func cancelWhileStarting() {
        var harness = Harness(count: 1)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        // The step is starting: its operation is not known yet, so cancel() cannot cancel it.
        #expect(harness.machine.cancel() == [0])
        #expect(harness.machine.started(0, ending: nil, needsDelivery: false) == true)
    }

    @Test("cancelling after a finish: nothing to cancel, the finished step stays finished")
    func cancelAfterFinish() {
        var harness = Harness(count: 1)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        _ = harness.machine.started(0, ending: nil, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: nil) == .suspend)
        #expect(harness.machine.finished(0, ending: .succeeded) == .resume)
        #expect(harness.machine.cancel() == [])
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.ending(of: 0) == .succeeded)
    }

    @Test("a timeout against a running step abandons it; its later finish is late, reported nowhere")
    func timeoutThenFinish() {
        var harness = Harness(count: 2)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        _ = harness.machine.started(0, ending: nil, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: nil) == .start(1))
        _ = harness.machine.started(1, ending: .succeeded, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: nil) == .suspend)
        let abandoned = harness.machine.abandon(.timeout)
        #expect(abandoned?.steps == [0])
        #expect(abandoned?.resume == true)
        #expect(harness.machine.abandon(.timeout) == nil, "a second abandon has no effect")
        #expect(harness.machine.isCancelled, "an abandoned transaction counts as cancelled")
        #expect(harness.machine.cancel() == nil, "so a later cancel has no effect")
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.abandonedSteps == [0])
        #expect(harness.machine.abandonReason == .timeout)
        #expect(harness.machine.finished(0, ending: .succeeded) == .late)
        #expect(harness.machine.ending(of: 0) == .cancelled)
    }

    @Test("a finish just before the timeout: the timeout finds nothing running")
    func finishThenTimeout() {
        var harness = Harness(count: 1)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        _ = harness.machine.started(0, ending: nil, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: nil) == .suspend)
        #expect(harness.machine.finished(0, ending: .succeeded) == .resume)
        let abandoned = harness.machine.abandon(.timeout)
        #expect(abandoned?.steps == [])
        #expect(abandoned?.resume == false, "the run is driven again already")
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.ending(of: 0) == .succeeded)
    }

    @Test("a shutdown against a queued run: the lane cancels it before it starts, every step is skipped")
    func shutdownQueued() {
        // Shutdown cancels what is queued (`Lane.cancelQueuedRuns`): the machine sees `cancel()`
        // before its first `next`.
        var harness = Harness(count: 2)
        #expect(harness.machine.cancel() == [], "nothing is running")
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: true, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .report(1, announce: true, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.ending(of: 0) == .cancelled)
        #expect(harness.machine.ending(of: 1) == .cancelled)
        #expect(harness.machine.abandonReason == nil, "a cancelled run is not abandoned")
    }

    @Test("a shutdown's deadline against a suspended run: it abandons the running step, skips the rest")
    func shutdownSuspended() {
        var harness = Harness(count: 2)
        let table = WaitsForTable([[], [0]])
        defer { withExtendedLifetime(table) {} }
        let waitsFor = table.view
        #expect(harness.machine.next(waitsFor: waitsFor) == .start(0))
        _ = harness.machine.started(0, ending: nil, needsDelivery: false)
        #expect(harness.machine.next(waitsFor: waitsFor) == .suspend)
        let abandoned = harness.machine.abandon(.shutdown)
        #expect(abandoned?.steps == [0])
        #expect(abandoned?.resume == true, "the suspended run is driven again, to finish")
        #expect(harness.machine.next(waitsFor: waitsFor) == .report(0, announce: false, deliver: true))
        #expect(harness.machine.next(waitsFor: waitsFor) == .report(1, announce: true, deliver: false))
        #expect(harness.machine.next(waitsFor: waitsFor) == .finish)
        #expect(harness.machine.abandonedSteps == [0])
        #expect(harness.machine.abandonReason == .shutdown)
        #expect(harness.machine.finished(0, ending: .succeeded) == .late)
        #expect(harness.machine.ending(of: 1) == .cancelled)
    }

    @Test("a middleware cancelling in willDispatch: the step announced is skipped, not started")
    func skipAfterAnnounce() {
        var harness = Harness(count: 1, reportsNeedWork: true)
        #expect(harness.machine.next(waitsFor: nil) == .start(0))
        _ = harness.machine.cancel()
        #expect(harness.machine.isCancelled)
        harness.machine.skipStarting(0)
        #expect(harness.machine.next(waitsFor: nil) == .report(0, announce: false, deliver: false))
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.ending(of: 0) == .cancelled)
    }

    @Test("after finishing, cancel and abandon have no effect")
    func finishOnce() {
        var harness = Harness(count: 0)
        #expect(harness.machine.next(waitsFor: nil) == .finish)
        #expect(harness.machine.cancel() == nil)
        #expect(harness.machine.abandon(.shutdown) == nil)
    }

    @Test("driving a finished transaction stops the program with a message")
    func drivingAfterFinishTraps() async {
        await #expect(processExitsWith: .failure) {
            let steps = UnsafeMutablePointer<TransactionMachine.Step>.allocate(capacity: 1)
            var machine = TransactionMachine(steps: steps, count: 0, reportsNeedWork: false, cancelled: false)
            _ = machine.next(waitsFor: nil)
            _ = machine.next(waitsFor: nil)
        }
    }
}

@Suite("Runs driving the machine")
struct TransactionRunTests {
    @Test(
        "a store unregistered while a transaction reaches it still finishes that transaction; later ones miss it",
        arguments: [DispatchMode.async, .serial, .sync, .mainThread]
    )
    func unregisteredMidTransaction(mode: DispatchMode) throws {
        let dispatcher = Dispatcher()
        let gate = Gate()
        let started = Gate()
        let gated = makeCounterStore("gated", reducer: GatedCounterReducer(gate: gate, started: started))
        try dispatcher.register(store: gated)
        try dispatcher.register(store: makeCounterStore("other"))
        let result = Shared<DispatchResult?>(nil)
        let done = Gate()
        onNewThread {
            dispatcher.dispatch(CounterAction.add(3), mode: mode) { outcome in
                result.withLock { $0 = outcome }
                done.open()
            }
        }
        #expect(started.wait())
        #expect(dispatcher.unregister(identifier: "gated") != nil)
        gate.open()
        #expect(done.wait())
        #expect(Set(result.current?.handledStores ?? []) == ["gated", "other"])
        #expect(gated.state.count == 3)
        let later = try #require(dispatchAndWait(dispatcher, CounterAction.add(1)))
        #expect(later.handledStores == ["other"])
        #expect(gated.state.count == 3)
    }
}
