import DispatchStore

/// A type that gives itself a name for action logs and journals, the same in every process.
///
/// A log names each action's type so that another process can decode it. By default that name is
/// the module-qualified name, `String(reflecting:)`, for example `"Inventory.InventoryAction"`. A
/// type declared `private`, `fileprivate` or inside a function has no such name (Swift spells it with
/// a memory address that changes from run to run), so a log refuses it with
/// ``ActionLogError/Code/unstableTypeName``. Declare the type at file scope without `private`, or
/// conform it to `StablyNamed`:
///
/// ```swift
/// private enum Ping: ActionType, Codable, StablyNamed {
///     static let stableName = "Diagnostics.Ping"
///     case ping
/// }
/// ```
///
/// The name is also what lets a type be renamed or moved to another module without making old
/// logs unreadable: keep its `stableName`.
public protocol StablyNamed {
    /// The name logs write for this type; non-empty, and unique among the types a log holds.
    static var stableName: String { get }
}
