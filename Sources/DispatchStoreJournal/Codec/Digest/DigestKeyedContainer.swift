import DispatchStore

/// An object being digested: each member's key and value digested as they come.
struct DigestKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    private func add(_ key: Key, _ value: UInt64) {
        node.members.append((StateDigest.string(key.stringValue), .value(value)))
    }

    private func addChild(_ key: Key) -> DigestEncoder {
        node.addChild(key: StateDigest.string(key.stringValue))
    }

    mutating func encodeNil(forKey key: Key) {
        add(key, StateDigest.null)
    }

    /// Witnesses the protocol's `encode(_:forKey:)` requirement of each scalar type.
    mutating func encode<Value: DigestScalar>(_ value: Value, forKey key: Key) {
        add(key, value.scalarDigest)
    }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        add(key, try StateDigest.digestValue(value))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        addChild(key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        addChild(key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        node.addChild(key: StateDigest.string("super"))
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        addChild(key)
    }
}
