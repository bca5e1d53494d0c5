/// What the registry finds routes by: an action type, or the identifier a dispatch names.
protocol RouteKey: Equatable, Sendable {
    /// A few bits that differ between keys, cheap to compute: they pick the key's slot among the
    /// recent routes (see ``RecentRoutes``).
    var recentSlot: Int { get }
}

extension ObjectIdentifier: RouteKey {
    /// Bits of the type's address; type metadata is at least 8-byte aligned, so the lowest bits,
    /// always zero, are skipped.
    var recentSlot: Int {
        Int(truncatingIfNeeded: UInt(bitPattern: self) >> 4)
    }
}

extension String: RouteKey {
    /// The length and the last byte: identifiers often differ only in a final number
    /// (`store0`, `store1`), and hashing the whole string costs more than the rest of a dispatch's
    /// registry lookup (S5).
    ///
    /// Read through `withUTF8`, which reaches a native or small string's bytes directly;
    /// `utf8.last` walks the view's generic index (about 75 instructions, S5).
    var recentSlot: Int {
        var bytes = self
        return bytes.withUTF8 { $0.count &* 31 &+ Int($0.last ?? 0) }
    }
}
