import DispatchStore

/// What one value encoded: a scalar, or the members of its container, some of them nested
/// containers filled after they were created.
final class DigestNode {
    enum Member {
        case value(UInt64)
        case node(DigestNode)
    }

    enum Kind {
        case none, scalar, keyed, unkeyed
    }

    var kind = Kind.none
    var scalar: UInt64 = 0
    /// For keyed containers, each member's key digest and value.
    var members: [(key: UInt64, value: Member)] = []

    var digest: UInt64 {
        switch kind {
        case .none:
            return StateDigest.null
        case .scalar:
            return scalar
        case .keyed:
            let values = members.map { StateDigest.combine($0.key, Self.resolve($0.value)) }
            return StateDigest.container(0x6B65_79, values, ordered: false)
        case .unkeyed:
            return StateDigest.container(0x6C69_7374, members.map { Self.resolve($0.value) }, ordered: true)
        }
    }

    private static func resolve(_ member: Member) -> UInt64 {
        switch member {
        case .value(let value): value
        case .node(let node): node.digest
        }
    }
}
