import DispatchStore

/// A 64-bit digest of a value's `Encodable` form, the same in every process: the checksums that
/// action logs record and replays compare.
///
/// The digest follows what the value encodes, not its memory. Keyed containers, and the elements of
/// a `Set` or a `Dictionary`, are combined without regard to order (their iteration order changes
/// from process to process); arrays and other unkeyed containers in order. Values that encode alike
/// have the same digest; values that encode differently almost never do.
enum StateDigest {
    /// The digest of `value`'s encoded form, or `nil` when its encoding throws.
    static func digest(of value: any Encodable) -> UInt64? {
        func open<Value: Encodable>(_ value: Value) -> UInt64? {
            try? digestValue(value)
        }
        return open(value)
    }

    /// The digest of one value: `Set` and `Dictionary` by their elements, anything else by encoding it.
    static func digestValue<Value: Encodable>(_ value: Value) throws -> UInt64 {
        // The common scalars without an encoder or a dynamic cast (arrays of them call this per element).
        if Value.self == Int.self { return number(unsafeBitCast(value, to: Int.self)) }
        if Value.self == String.self { return string(unsafeBitCast(value, to: String.self)) }
        if Value.self == Double.self { return floatingPoint(unsafeBitCast(value, to: Double.self)) }
        if Value.self == Bool.self { return unsafeBitCast(value, to: Bool.self) ? yes : no }
        if Value.self == Int64.self { return number(unsafeBitCast(value, to: Int64.self)) }
        if Value.self == UInt64.self { return number(unsafeBitCast(value, to: UInt64.self)) }
        if let unordered = value as? any UnorderedDigestible { return try unordered.unorderedDigest() }
        let encoder = DigestEncoder()
        try value.encode(to: encoder)
        return encoder.node.digest
    }

    /// FNV-1a's starting value.
    static let fnvBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// FNV-1a over `bytes`, going on from `hash` (the digest of the bytes before them).
    static func fnv(_ bytes: some Sequence<UInt8>, continuing hash: UInt64 = fnvBasis) -> UInt64 {
        var hash = hash
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    /// A strong mix of one word (SplitMix64's finaliser).
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Combines two digests in order.
    static func combine(_ left: UInt64, _ right: UInt64) -> UInt64 {
        mix(left &* 0x100_0000_01B3 ^ right)
    }

    /// Combines a container's members: in order, or as a sum (order-free); `tag` tells containers
    /// of different kinds apart.
    static func container(_ tag: UInt64, _ members: [UInt64], ordered: Bool) -> UInt64 {
        var result = mix(tag ^ UInt64(members.count) << 8)
        if ordered {
            for member in members {
                result = combine(result, member)
            }
        } else {
            var sum: UInt64 = 0
            for member in members {
                sum = sum &+ mix(member)
            }
            result = combine(result, sum)
        }
        return result
    }

    static func string(_ text: String) -> UInt64 {
        combine(0x73, fnv(text.utf8))
    }

    static func number<Value: BinaryInteger>(_ value: Value) -> UInt64 {
        combine(0x6E, UInt64(truncatingIfNeeded: value) ^ (value < 0 ? 0x8000_0000_0000_0000 : 0))
    }

    static func floatingPoint(_ value: Double) -> UInt64 {
        // A whole number digests like the integer it equals, as it would encode in JSON.
        if let whole = Int64(exactly: value) { return number(whole) }
        return combine(0x66, value.bitPattern)
    }

    static let null = mix(0x6E75_6C6C)
    static let yes = mix(0x74)
    static let no = mix(0x66)
}
