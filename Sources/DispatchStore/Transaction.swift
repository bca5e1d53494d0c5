/// One dispatch: its unique id, the action, the mode and the stores it reaches.
///
/// `Dispatcher.dispatch(_:to:mode:timeout:then:)` creates exactly one transaction per call and returns
/// it; middleware receive it in every hook, and the completion's ``DispatchResult`` carries it.
/// Two transactions are equal when their ids are.
public struct Transaction: Sendable, Identifiable, Hashable, CustomStringConvertible {
    /// A number unique in this process; the transactions dispatched from one thread get increasing ids.
    public let id: UInt64
    /// The dispatched action.
    public let action: any ActionType
    /// The identifier passed as `to:`, when the dispatch named one store.
    public let targetIdentifier: String?
    /// The route and the run.
    @usableFromInline
    let links: Links
    /// The mode the action was dispatched in.
    ///
    /// Last, so that a run keeps its own flags in the bytes after it (S5).
    public let mode: DispatchMode

    /// The run that executes the transaction, if it refers to one (see ``Links/run``).
    var run: TransactionRun.Reference? {
        links.run
    }

    /// What a reused run holds between two transactions: refers to nothing, so that the next
    /// transaction is written over it without destroying it first.
    ///
    /// Built where it is assigned, which moves it; a stored constant would cost a lazy-global check
    /// and a copy of its existential on every reuse (S5).
    static var idle: Transaction {
        Transaction(id: 0, action: noAction, mode: .async, targetIdentifier: nil, links: .none)
    }

    /// The action of ``idle``; also what a `.sync` run keeps when nobody reads its transaction (S1).
    static var noAction: any ActionType {
        NoAction()
    }

    /// A transaction with the links the engine handed back; inlined into the dispatching module, so
    /// that the action is boxed where the transaction keeps it (S1).
    @inlinable
    init(id: UInt64, action: any ActionType, mode: DispatchMode, targetIdentifier: String?, links: Links) {
        self.id = id
        self.action = action
        self.mode = mode
        self.targetIdentifier = targetIdentifier
        self.links = links
    }

    /// The action of ``idle``.
    private struct NoAction: ActionType {}

    /// The identifiers of the stores the action reaches, in the order their operations start;
    /// empty when no store handles it.
    public var storeIdentifiers: [String] {
        links.storeIdentifiers
    }

    /// Cancels the transaction's operations that have not finished yet.
    ///
    /// Operations that have not started are skipped; a running `ActionOperation` sees `isCancelled`
    /// become true and should finish early. Stores that wait for a cancelled store are cancelled
    /// too. The completion still runs exactly once and lists the cancelled stores. Cancelling a
    /// transaction that has finished, or a `.sync` dispatch after it returned, does nothing.
    ///
    /// - Note: Safe to call from any thread, any number of times.
    public func cancel() {
        run?.run.requestCancel()
    }

    /// A line such as `#12 increase -> [counter] (serial)`.
    public var description: String {
        "#\(id) \(action) -> [\(storeIdentifiers.joined(separator: ", "))] (\(mode))"
    }

    /// Whether two transactions are the same dispatch.
    public static func == (lhs: Transaction, rhs: Transaction) -> Bool {
        lhs.id == rhs.id
    }

    /// Hashes the transaction's id.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
    }
}

extension Transaction {
    /// What a transaction refers to inside the engine (see ``Kind``).
    ///
    /// Opaque to the dispatching module, which only passes it from the engine to the transaction.
    @usableFromInline
    struct Links: Sendable {
        let kind: Kind

        /// What a transaction refers to: the route, the run that holds it, or the one store a `.sync`
        /// dispatch reached through a shortcut.
        enum Kind: Sendable {
            /// Nothing yet: a transaction a run keeps, or one that reaches no store.
            case none
            /// The stores the action reaches: in results, and in the transaction a `.sync` dispatch
            /// returns (it is over).
            case route(Route)
            /// The run that holds the transaction, for `cancel()` and for its route: in the
            /// transactions of queued dispatches, of `perform`, of rejected dispatches and in those
            /// the middleware receive.
            ///
            /// Strong: the run does not keep transactions that refer to it, so there is no cycle;
            /// and a lane reuses a run only once nothing else refers to it, so the run's route stays
            /// this transaction's for as long as it lives.
            case run(TransactionRun.Reference)
            /// The identifier of the one store a `.sync` dispatch through a shortcut reached: a small
            /// identifier is held without reference counting (S1).
            case store(String)
        }

        /// No links.
        static var none: Links { Links(kind: .none) }

        /// Links to the run that holds the transaction.
        static func run(_ reference: TransactionRun.Reference) -> Links { Links(kind: .run(reference)) }

        /// Links to the one store a shortcut reached.
        static func store(_ identifier: String) -> Links { Links(kind: .store(identifier)) }

        /// Links to `route`, or none.
        init(route: consuming Route?) {
            if let route { kind = .route(route) } else { kind = .none }
        }

        private init(kind: Kind) {
            self.kind = kind
        }

        /// The identifiers of the stores the action reaches.
        var storeIdentifiers: [String] {
            switch kind {
            case .none: []
            case .route(let route): route.storeIdentifiers
            case .run(let reference): reference.run.route?.storeIdentifiers ?? []
            case .store(let identifier): [identifier]
            }
        }

        /// The run, when the transaction refers to one.
        var run: TransactionRun.Reference? {
            if case .run(let reference) = kind { return reference }
            return nil
        }
    }
}
