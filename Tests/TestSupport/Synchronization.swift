import Dispatch
public import DispatchStore
import Foundation

/// A value shared between test threads: the library's `Locked`, with a few conveniences.
public typealias Shared<Value: Sendable> = Locked<Value>

extension Locked {
    /// The value now.
    public var current: Value {
        value
    }
}

extension Locked where Value: RangeReplaceableCollection {
    /// Appends `element`.
    public func append(_ element: Value.Element) {
        withLock { $0.append(element) }
    }
}

extension Locked where Value == Bool {
    /// Sets the flag; `true` only for the first caller.
    public func claimFirst() -> Bool {
        withLock { value in
            defer { value = true }
            return !value
        }
    }
}

extension Locked where Value == Int {
    /// Adds one and returns the new value.
    @discardableResult
    public func increment() -> Int {
        withLock { value in
            value += 1
            return value
        }
    }
}

/// A one-way gate that threads and tasks wait on until it opens.
///
/// Used instead of sleeps to order events. Async code uses the `async` `wait`, which suspends
/// instead of blocking one of the few threads of Swift's cooperative pool.
public final class Gate: Sendable {
    /// A closed gate.
    public init() {}

    private let semaphore = DispatchSemaphore(value: 0)
    private let state = Shared<(opened: Bool, waiters: [Int: CheckedContinuation<Bool, Never>], next: Int)>(
        (false, [:], 0)
    )

    /// Opens the gate (once); every waiter goes on.
    public func open() {
        let (first, waiters) = state.withLock { state in
            defer {
                state.opened = true
                state.waiters = [:]
            }
            return (!state.opened, Array(state.waiters.values))
        }
        guard first else { return }
        semaphore.signal()
        for waiter in waiters {
            waiter.resume(returning: true)
        }
    }

    /// Waits until the gate opens; `false` after `seconds` (a failure, not an ordering tool).
    @discardableResult
    public func wait(seconds: Double = 600) -> Bool {
        guard semaphore.wait(timeout: .now() + seconds) == .success else { return false }
        semaphore.signal()
        return true
    }

    /// Suspends until the gate opens; `false` after `seconds` (a failure, not an ordering tool).
    @discardableResult
    public func wait(seconds: Double = 600) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let number: Int? = state.withLock { state in
                guard !state.opened else { return nil }
                state.next += 1
                state.waiters[state.next] = continuation
                return state.next
            }
            guard let number else {
                continuation.resume(returning: true)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [state] in
                state.withLock { $0.waiters.removeValue(forKey: number) }?.resume(returning: false)
            }
        }
    }

    /// Whether the gate is open.
    public var isOpen: Bool {
        state.current.opened
    }
}

/// Counts down to zero; `wait` returns when it gets there.
public final class Countdown: Sendable {
    private let remaining: Shared<Int>
    private let done = Gate()

    /// Counts down from `count`.
    public init(_ count: Int) {
        remaining = Shared(count)
        if count == 0 { done.open() }
    }

    /// Counts one down.
    public func tick() {
        let left = remaining.withLock { value in
            value -= 1
            return value
        }
        if left == 0 { done.open() }
    }

    /// Waits until the count reaches zero; `false` after `seconds`.
    @discardableResult
    public func wait(seconds: Double = 600) -> Bool {
        done.wait(seconds: seconds)
    }

    /// Suspends until the count reaches zero; `false` after `seconds`.
    @discardableResult
    public func wait(seconds: Double = 600) async -> Bool {
        await done.wait(seconds: seconds)
    }
}

/// Runs `body` on a new thread (not on a worker of libdispatch's pool, which the parallel tests'
/// blocking waits can exhaust).
public func onNewThread(_ body: @escaping @Sendable () -> Void) {
    Thread.detachNewThread(body)
}

/// Runs `body` on `count` threads at once and waits for all of them.
public func concurrently(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(index)
            group.leave()
        }
    }
    group.wait()
}

/// Runs blocking work (waiting for a subprocess, for threads) on a thread of its own and suspends
/// until it returns.
///
/// Swift Testing runs tests on Swift's cooperative pool, which has one thread per core: a test
/// that blocks one of them for seconds delays every async test until it is done. Expectations
/// belong outside `body`, in the test's task, so that they are attributed to the test.
public func offThePool<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Swift.Result { try body() })
        }
    }
}

/// Runs blocking work on a thread of its own and suspends until it returns; see the throwing version.
public func offThePool<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(returning: body())
        }
    }
}
