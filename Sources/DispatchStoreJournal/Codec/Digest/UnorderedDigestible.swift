import DispatchStore

/// `Set` and `Dictionary`: digested by their elements without regard to order.
protocol UnorderedDigestible {
    func unorderedDigest() throws -> UInt64
}

extension Set: UnorderedDigestible where Element: Encodable {
    func unorderedDigest() throws -> UInt64 {
        StateDigest.container(0x7365_74, try map { try StateDigest.digestValue($0) }, ordered: false)
    }
}

extension Dictionary: UnorderedDigestible where Key: Encodable, Value: Encodable {
    func unorderedDigest() throws -> UInt64 {
        let members = try map { key, value in
            let name: UInt64
            if let text = key as? String {
                name = StateDigest.string(text)
            } else {
                name = try StateDigest.digestValue(key)
            }
            return StateDigest.combine(name, try StateDigest.digestValue(value))
        }
        return StateDigest.container(0x6B65_79, members, ordered: false)
    }
}
