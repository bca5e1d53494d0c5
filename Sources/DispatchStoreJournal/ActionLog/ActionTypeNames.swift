import DispatchStore

/// The names logs give action types, checked once per type and remembered.
enum ActionTypeNames {
    private static let cache = LockedBox<[ObjectIdentifier: String]>([:])

    /// The name a log writes for `type`: its ``StablyNamed/stableName``, or else `String(reflecting:)`.
    static func name(of type: Any.Type) -> String {
        if let named = type as? any StablyNamed.Type { return named.stableName }
        return String(reflecting: type)
    }

    /// The name, when another process running the same program reads it as the same type.
    ///
    /// - Parameters:
    ///   - type: The action type.
    ///   - path: The log, for the error.
    /// - Returns: Its name in logs.
    /// - Throws: ``ActionLogError/Code/unstableTypeName`` naming the type and how to fix it.
    static func stableName(of type: Any.Type, path: String) throws(ActionLogError) -> String {
        let key = ObjectIdentifier(type)
        if let known = cache.withLockedValue({ $0[key] }) { return known }
        let name = name(of: type)
        if type is any StablyNamed.Type {
            guard !name.isEmpty else { throw ActionLogError.unstableName(of: type, path: path, reason: "is empty") }
        } else if name.contains("(") || name.contains("$") {
            throw ActionLogError.unstableName(of: type, path: path, reason: "changes from one run to the next")
        }
        cache.withLockedValue { $0[key] = name }
        return name
    }
}
