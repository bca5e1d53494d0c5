import DispatchStore

/// The `Encoder` behind ``StateDigest``: collects what a value encodes into a ``DigestNode``.
final class DigestEncoder: Encoder {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    var userInfo: [CodingUserInfoKey: Any] {
        [:]
    }

    init(node: DigestNode = DigestNode()) {
        self.node = node
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.kind = .keyed
        return KeyedEncodingContainer(DigestKeyedContainer<Key>(node: node))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.kind = .unkeyed
        return DigestUnkeyedContainer(node: node)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        DigestSingleValueContainer(node: node)
    }
}

extension DigestNode {
    /// Adds a member under `key` holding a new node, and returns the encoder that fills it.
    func addChild(key: UInt64) -> DigestEncoder {
        let child = DigestNode()
        members.append((key, .node(child)))
        return DigestEncoder(node: child)
    }
}
