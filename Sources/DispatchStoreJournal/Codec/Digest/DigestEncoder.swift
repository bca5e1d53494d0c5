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

/// The types every encoding container takes as they are, each with an `encode` of its own: digested
/// without an encoder.
protocol DigestScalar: Encodable {
    var scalarDigest: UInt64 { get }
}

extension DigestScalar where Self: BinaryInteger {
    var scalarDigest: UInt64 {
        StateDigest.number(self)
    }
}

extension Int: DigestScalar {}
extension Int8: DigestScalar {}
extension Int16: DigestScalar {}
extension Int32: DigestScalar {}
extension Int64: DigestScalar {}
extension UInt: DigestScalar {}
extension UInt8: DigestScalar {}
extension UInt16: DigestScalar {}
extension UInt32: DigestScalar {}
extension UInt64: DigestScalar {}

extension Bool: DigestScalar {
    var scalarDigest: UInt64 {
        self ? StateDigest.yes : StateDigest.no
    }
}

extension String: DigestScalar {
    var scalarDigest: UInt64 {
        StateDigest.string(self)
    }
}

extension Double: DigestScalar {
    var scalarDigest: UInt64 {
        StateDigest.floatingPoint(self)
    }
}

extension Float: DigestScalar {
    var scalarDigest: UInt64 {
        StateDigest.floatingPoint(Double(self))
    }
}

extension DigestNode {
    /// Adds a member under `key` holding a new node, and returns the encoder that fills it.
    fileprivate func addChild(key: UInt64) -> DigestEncoder {
        let child = DigestNode()
        members.append((key, .node(child)))
        return DigestEncoder(node: child)
    }
}

private struct DigestKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
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

/// The unkeyed and the single-value container, whose `encode` methods have the same signatures and
/// differ only in where a digest goes.
private protocol DigestValueSink {
    /// Keeps the digest of one encoded value.
    func add(_ digest: UInt64)
}

extension DigestValueSink {
    mutating func encodeNil() {
        add(StateDigest.null)
    }

    /// Witnesses the containers' `encode(_:)` requirement of each scalar type.
    mutating func encode<Value: DigestScalar>(_ value: Value) {
        add(value.scalarDigest)
    }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        add(try StateDigest.digestValue(value))
    }
}

private struct DigestUnkeyedContainer: UnkeyedEncodingContainer, DigestValueSink {
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

private struct DigestSingleValueContainer: SingleValueEncodingContainer, DigestValueSink {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    func add(_ digest: UInt64) {
        node.kind = .scalar
        node.scalar = digest
    }
}
