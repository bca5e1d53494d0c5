import DispatchStore
import DispatchStoreTesting
import Foundation
import TestSupport
import Testing

/// What the audit store counts: the changes of the counter it was told of.
struct Audit: StateType, Equatable {
    var entries: [Int] = []
}

enum AuditAction: ActionType, Equatable {
    case record(Int)
}

final class AuditReducer: Reducer<Audit, AuditAction> {
    override func reduce(_ action: AuditAction, into state: inout Audit) {
        guard case .record(let count) = action else { return }
        state.entries.append(count)
    }
}

/// A counter and an audit store, and an observer of the counter that records each change in the
/// audit store with a nested `.sync` dispatch: it finishes while the counter's transaction is still
/// being completed, so during the step that sent it.
private func auditedCounter() throws -> (
    Dispatcher, Store<Counter, CounterAction>, Store<Audit, AuditAction>, Subscription
) {
    let dispatcher = Dispatcher()
    let counter = Store<Counter, CounterAction>(identifier: "counter", reducer: InlineCounterReducer())
    let audit = Store<Audit, AuditAction>(identifier: "audit", reducer: AuditReducer())
    try dispatcher.register(store: counter)
    try dispatcher.register(store: audit)
    let observer = counter.subscribe { [weak dispatcher] state, action in
        guard action != nil else { return }
        dispatcher?.dispatch(AuditAction.record(state.count), mode: .sync)
    }
    return (dispatcher, counter, audit, observer)
}

@Suite("DispatcherTester: a transaction an observer dispatches during a step")
struct NestedDispatchTests {
    @Test("unaccounted for, it is one issue, naming the step it finished during, not one at the send and another later")
    func oneIssue() async throws {
        let (dispatcher, counter, _, observer) = try auditedCounter()
        defer { observer.cancel() }
        let tester = DispatcherTester(dispatcher)
        let line = #line
        let issues = await recordedIssues {
            await tester.send(CounterAction.increase) {
                $0.expect(counter) { $0.count = 1 }
            }
            await tester.finish()
        }
        #expect(issues.count == 1, "\(issues)")
        let text = issues.first?.text ?? ""
        #expect(text.hasPrefix("finish(): 1 transaction dispatched outside the tester finished and was not received: "))
        #expect(text.contains("AuditAction.record(1) (#"))
        #expect(text.contains("during send(CounterAction.increase)"))
        #expect(issues.first?.line == line + 5)
    }

    @Test("expected in the send, it needs no receive")
    func expectedInTheSend() async throws {
        let (dispatcher, counter, audit, observer) = try auditedCounter()
        defer { observer.cancel() }
        let tester = DispatcherTester(dispatcher)
        await tester.send(CounterAction.increase) {
            $0.expect(counter) { $0.count = 1 }
            $0.expect(audit) { $0.entries = [1] }
        }
        await tester.send(CounterAction.add(2)) {
            $0.expect(counter) { $0.count = 3 }
            $0.expect(audit) { $0.entries = [1, 3] }
        }
        await tester.finish()
    }

    @Test("received, its changes are checked there and not at the send")
    func received() async throws {
        let (dispatcher, counter, audit, observer) = try auditedCounter()
        defer { observer.cancel() }
        let tester = DispatcherTester(dispatcher)
        await tester.send(CounterAction.increase) {
            $0.expect(counter) { $0.count = 1 }
        }
        await tester.receive(AuditAction.record(1)) {
            $0.expect(audit) { $0.entries = [1] }
        }
        await tester.send(CounterAction.add(2)) {
            $0.expect(counter) { $0.count = 3 }
        }
        let line = #line
        let issues = await recordedIssues {
            await tester.receive(AuditAction.record(3)) {
                $0.expect(audit) { $0.entries = [1, 4] }
            }
        }
        #expect(issues.map(\.line) == [line + 3])
        #expect(issues.first?.text.contains("entries[1]: expected 4, actual 3") == true, "\(issues)")
        await tester.finish()
    }

    @Test("expected in the send and received with no expectations, as before, is no issue")
    func expectedAndReceived() async throws {
        let (dispatcher, counter, audit, observer) = try auditedCounter()
        defer { observer.cancel() }
        let tester = DispatcherTester(dispatcher)
        await tester.send(CounterAction.increase) {
            $0.expect(counter) { $0.count = 1 }
            $0.expect(audit) { $0.entries = [1] }
        }
        await tester.receive(AuditAction.record(1))
        await tester.finish()
    }
}
