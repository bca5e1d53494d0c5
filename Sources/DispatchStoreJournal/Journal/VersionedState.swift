public import DispatchStore

/// A state that says which version of its encoded form it writes, so that a ``Journal`` can tell an
/// old snapshot from a current one and migrate it (``StateMigration``).
///
/// A `Codable` state that does not conform is version 1. Raise the version when a snapshot written
/// by the previous version of the program no longer decodes as the new state, and give the journal
/// a migration from the old version:
///
/// ```swift
/// struct Balances: VersionedState {
///     static let stateVersion = 2  // version 1 kept whole dollars in `dollars`
///     var cents: [String: Int] = [:]
/// }
/// ```
public protocol VersionedState: StateType, Codable {
    /// The version of the encoded form this type writes and reads; 1 or more.
    static var stateVersion: Int { get }
}

extension StateType {
    /// The version a journal writes for this state type: ``VersionedState/stateVersion``, or 1.
    static var journalVersion: Int {
        (Self.self as? any VersionedState.Type)?.stateVersion ?? 1
    }
}
