import DispatchStore

/// The states of a dispatcher's stores at one moment, in registration order.
struct StoreStates: Sendable {
    /// The store identifiers, in registration order.
    private(set) var identifiers: [String] = []
    private var states: [String: any StateType] = [:]

    /// The states recorded in a consistent cut.
    init(_ snapshots: [StoreSnapshot]) {
        for snapshot in snapshots {
            append(snapshot.storeIdentifier, snapshot.state)
        }
    }

    /// The current states of `stores`, read one after the other.
    init(reading stores: [any AnyStore]) {
        for store in stores {
            append(store.identifier, store.anyState)
        }
    }

    private mutating func append(_ identifier: String, _ state: any StateType) {
        if states.updateValue(state, forKey: identifier) == nil {
            identifiers.append(identifier)
        }
    }

    subscript(identifier: String) -> (any StateType)? {
        states[identifier]
    }

    /// These states with `identifier`'s replaced by `state`.
    func replacing(_ identifier: String, with state: any StateType) -> StoreStates {
        var copy = self
        copy.append(identifier, state)
        return copy
    }
}
