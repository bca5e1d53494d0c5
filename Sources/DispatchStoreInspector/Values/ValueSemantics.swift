import DispatchStore

/// Which types are values all the way down.
///
/// Plain data, `String`, and the standard collections and optionals of such types: their bytes
/// identify their contents (see ``Fingerprint``). A class instance, or a collection of them, can
/// change behind unchanged bytes.
enum ValueSemantics {
    /// The answers so far, by type.
    private static let known = Locked<[ObjectIdentifier: Bool]>([:])

    /// Whether `type` is a value all the way down.
    static func isValue<Value>(_ type: Value.Type) -> Bool {
        if _isPOD(type) { return true }
        if type == String.self { return true }
        let key = ObjectIdentifier(type)
        if let answer = known.withLock({ $0[key] }) { return answer }
        let answer = (type as? any ValueContainer.Type)?.holdsOnlyValues ?? false
        known.withLock { $0[key] = answer }
        return answer
    }
}

extension Array: ValueContainer {
    static var holdsOnlyValues: Bool {
        ValueSemantics.isValue(Element.self)
    }
}

extension Set: ValueContainer {
    static var holdsOnlyValues: Bool {
        ValueSemantics.isValue(Element.self)
    }
}

extension Dictionary: ValueContainer {
    static var holdsOnlyValues: Bool {
        ValueSemantics.isValue(Key.self) && ValueSemantics.isValue(Value.self)
    }
}

extension Optional: ValueContainer {
    static var holdsOnlyValues: Bool {
        ValueSemantics.isValue(Wrapped.self)
    }
}
