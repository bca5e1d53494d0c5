extension RecorderMiddleware {
    /// An undo step made of several transactions: the ones you include make one history entry.
    ///
    /// Create one with ``RecorderMiddleware/beginGroup()`` or ``RecorderMiddleware/group(_:)``, and
    /// include each transaction of the gesture, as returned by `dispatch` or carried by the result
    /// of `perform`:
    ///
    /// ```swift
    /// recorder.group { gesture in
    ///     gesture.include(dispatcher.dispatch(TodoAction.delete(id)))
    ///     gesture.include(dispatcher.dispatch(SelectionAction.down, mode: .serial))
    /// }
    /// recorder.previous()  // undoes both
    /// ```
    ///
    /// Membership is by transaction, not by time: a transaction belongs to the group whether it
    /// finished before ``include(_:)`` (a `.sync` dispatch) or finishes on another thread after the
    /// group ended (an `.async` one), and a transaction of some other code that finishes meanwhile
    /// does not. The group's entry holds the states after the latest of its transactions to finish;
    /// each one that finishes later replaces them. When transactions that are not in the group are
    /// recorded between two of its transactions, the group's step moves past them and becomes the
    /// newest entry (their entries then hold the gesture's partial states, as they were taken).
    ///
    /// A move through the history (``RecorderMiddleware/previous()``, ``RecorderMiddleware/next()``,
    /// ``RecorderMiddleware/jump(to:)``) ends the group's current step: its transactions that finish
    /// after the move make a new entry together. Transactions the recorder does not record (left
    /// out by `recording:`, or handled by no store) are ignored.
    ///
    /// - Note: Thread-safe: include transactions from any thread. The group ends when you call
    ///   ``end()`` or release it; transactions included before that still join it when they finish.
    public final class Group: Sendable {
        private let recorder: RecorderMiddleware
        private let number: Int

        fileprivate init(recorder: RecorderMiddleware, number: Int) {
            self.recorder = recorder
            self.number = number
        }

        deinit {
            recorder.endGroup(number)
        }

        /// Makes `transaction` part of the group's undo step.
        ///
        /// Call it right after the dispatch that returned the transaction (`include(dispatcher.dispatch(...))`),
        /// or with `result.transaction` after `perform`. Including a transaction twice, or in a
        /// second group, does nothing more.
        ///
        /// - Parameter transaction: A transaction of the dispatcher the recorder records, finished
        ///   or not.
        /// - Note: Does nothing after ``end()``. Safe from any thread; listeners of the recorder are
        ///   called when the history changes, on the calling thread.
        public func include(_ transaction: Transaction) {
            recorder.include(transaction, inGroup: number)
        }

        /// Ends the group: later ``include(_:)`` calls do nothing.
        ///
        /// Transactions included before still join the group's step when they finish. Calling it
        /// again does nothing; releasing the group ends it too.
        ///
        /// - Note: Safe from any thread.
        public func end() {
            recorder.endGroup(number)
        }

        /// Whether ``end()`` was called.
        public var isEnded: Bool {
            recorder.isGroupEnded(number)
        }
    }

    /// Starts a group: the transactions included in it make one history entry.
    ///
    /// ```swift
    /// let gesture = recorder.beginGroup()
    /// gesture.include(dispatcher.dispatch(TodoAction.delete(id)))
    /// gesture.include(dispatcher.dispatch(SelectionAction.down))
    /// gesture.end()
    /// ```
    ///
    /// - Returns: The group; call ``Group/end()`` when the gesture is over (releasing it ends it too).
    /// - Note: Safe from any thread. Groups are independent of each other and of `groupingBy:`; do
    ///   not include a transaction whose key `groupingBy:` merges with others.
    public func beginGroup() -> Group {
        let number = state.withLockedValue { $0.history.beginGroup() }
        return Group(recorder: self, number: number)
    }

    /// Runs `body` with a new group and ends the group when `body` returns or throws.
    ///
    /// ```swift
    /// recorder.group { gesture in
    ///     gesture.include(dispatcher.dispatch(TodoAction.delete(id), mode: .sync))
    ///     gesture.include(dispatcher.dispatch(SelectionAction.down, mode: .sync))
    /// }
    /// ```
    ///
    /// Transactions included in `body` join the group's step even when they finish after `body`
    /// returned.
    ///
    /// - Parameter body: The gesture: dispatch and include its transactions.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    /// - Note: Safe from any thread; `body` runs on the calling thread.
    public func group<Result>(_ body: (Group) throws -> Result) rethrows -> Result {
        let group = beginGroup()
        defer { group.end() }
        return try body(group)
    }

    /// Makes `transaction` part of group `number`'s step, and tells the listeners when the history
    /// changed.
    fileprivate func include(_ transaction: Transaction, inGroup number: Int) {
        let changed = state.withLockedValue { $0.history.include(transaction.id, inGroup: number) }
        if changed { notifyListeners() }
    }

    /// Ends group `number`: later inclusions do nothing.
    fileprivate func endGroup(_ number: Int) {
        state.withLockedValue { $0.history.endGroup(number) }
    }

    /// Whether group `number` was ended.
    fileprivate func isGroupEnded(_ number: Int) -> Bool {
        state.withLockedValue { $0.history.groups.isEnded(number) }
    }
}
