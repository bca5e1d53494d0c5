public import DispatchStore
public import Foundation

/// How a ``Journal`` upgrades a store's state from a snapshot written with an older
/// ``VersionedState/stateVersion``, in the manner of redux-persist's `migrate`.
///
/// The closure receives the version the snapshot holds and the state as that version encoded it
/// (JSON), and returns the current state. Decode the old form with a type of its own:
///
/// ```swift
/// struct BalancesV1: Decodable { var dollars: [String: Int] }
///
/// let migration = StateMigration(Balances.self) { version, data in
///     let old = try JSONDecoder().decode(BalancesV1.self, from: data)  // version 1
///     return Balances(cents: old.dollars.mapValues { $0 * 100 })
/// }
/// let journal = try Journal(directory: path, dispatcher: dispatcher, migrations: [migration])
/// ```
///
/// One migration per state type; it is used for every store with that state type, and only when a
/// snapshot's version is older than the type's. Records after the snapshot are replayed into the
/// migrated state.
public struct StateMigration: Sendable {
    /// The state type it produces.
    let stateType: ObjectIdentifier
    /// The state type's name, for messages.
    let stateTypeName: String
    let migrate: @Sendable (Int, Data) throws -> any StateType

    /// Creates a migration to `type`.
    ///
    /// - Parameters:
    ///   - type: The current state type.
    ///   - migrate: Given the snapshot's version and the state's JSON as that version wrote it,
    ///     returns the current state, or throws when it cannot (the journal then refuses to open,
    ///     naming the store and the snapshot, and changes nothing).
    public init<State: StateType>(
        _ type: State.Type,
        migrate: @escaping @Sendable (_ version: Int, _ data: Data) throws -> State
    ) {
        stateType = ObjectIdentifier(type)
        stateTypeName = String(reflecting: type)
        self.migrate = { version, data in try migrate(version, data) }
    }
}
