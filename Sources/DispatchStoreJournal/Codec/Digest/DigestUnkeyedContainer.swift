import DispatchStore

/// An array being digested: each element digested as it comes, in order.
struct DigestUnkeyedContainer: UnkeyedEncodingContainer, DigestValueSink {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    var count: Int {
        node.members.count
    }

    func add(_ digest: UInt64) {
        node.members.append((0, .value(digest)))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        node.addChild(key: 0).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        node.addChild(key: 0).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        node.addChild(key: 0)
    }
}
