/// `==` for a type that is `Equatable`, found once per type at run time.
enum Equality {
    /// How to compare two values of `type`, or `nil` when it is not `Equatable`.
    static func of<Value>(_ type: Value.Type) -> ((Value, Value) -> Bool)? {
        guard let equatable = type as? any Equatable.Type else { return nil }
        func make<Compared: Equatable>(_ compared: Compared.Type) -> Any {
            { (left: Compared, right: Compared) in left == right } as (Compared, Compared) -> Bool
        }
        return make(equatable) as? (Value, Value) -> Bool
    }
}
