import DispatchStore

/// One value, digested at once.
struct DigestSingleValueContainer: SingleValueEncodingContainer, DigestValueSink {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    func add(_ digest: UInt64) {
        node.kind = .scalar
        node.scalar = digest
    }
}
