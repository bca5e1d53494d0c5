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

private struct DigestKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    private func add(_ key: Key, _ value: UInt64) {
        node.members.append((StateDigest.string(key.stringValue), .value(value)))
    }

    private func add(_ key: Key, node child: DigestNode) {
        node.members.append((StateDigest.string(key.stringValue), .node(child)))
    }

    mutating func encodeNil(forKey key: Key) {
        add(key, StateDigest.null)
    }

    mutating func encode(_ value: Bool, forKey key: Key) {
        add(key, value ? StateDigest.yes : StateDigest.no)
    }

    mutating func encode(_ value: String, forKey key: Key) {
        add(key, StateDigest.string(value))
    }

    mutating func encode(_ value: Double, forKey key: Key) {
        add(key, StateDigest.floatingPoint(value))
    }

    mutating func encode(_ value: Float, forKey key: Key) {
        add(key, StateDigest.floatingPoint(Double(value)))
    }

    mutating func encode(_ value: Int, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: Int64, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: UInt64, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: Int8, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: Int16, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: Int32, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: UInt, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: UInt8, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: UInt16, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode(_ value: UInt32, forKey key: Key) {
        add(key, StateDigest.number(value))
    }

    mutating func encode<Value: Encodable>(_ value: Value, forKey key: Key) throws {
        add(key, try StateDigest.digestValue(value))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = DigestNode()
        add(key, node: child)
        return DigestEncoder(node: child).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = DigestNode()
        add(key, node: child)
        return DigestEncoder(node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = DigestNode()
        node.members.append((StateDigest.string("super"), .node(child)))
        return DigestEncoder(node: child)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let child = DigestNode()
        add(key, node: child)
        return DigestEncoder(node: child)
    }
}

private struct DigestUnkeyedContainer: UnkeyedEncodingContainer {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    var count: Int {
        node.members.count
    }

    private func add(_ value: UInt64) {
        node.members.append((0, .value(value)))
    }

    mutating func encodeNil() {
        add(StateDigest.null)
    }

    mutating func encode(_ value: Bool) {
        add(value ? StateDigest.yes : StateDigest.no)
    }

    mutating func encode(_ value: String) {
        add(StateDigest.string(value))
    }

    mutating func encode(_ value: Double) {
        add(StateDigest.floatingPoint(value))
    }

    mutating func encode(_ value: Float) {
        add(StateDigest.floatingPoint(Double(value)))
    }

    mutating func encode(_ value: Int) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: Int64) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt64) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: Int8) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: Int16) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: Int32) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt8) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt16) {
        add(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt32) {
        add(StateDigest.number(value))
    }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        add(try StateDigest.digestValue(value))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = DigestNode()
        node.members.append((0, .node(child)))
        return DigestEncoder(node: child).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = DigestNode()
        node.members.append((0, .node(child)))
        return DigestEncoder(node: child).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = DigestNode()
        node.members.append((0, .node(child)))
        return DigestEncoder(node: child)
    }
}

private struct DigestSingleValueContainer: SingleValueEncodingContainer {
    let node: DigestNode
    let codingPath: [any CodingKey] = []

    private func set(_ value: UInt64) {
        node.kind = .scalar
        node.scalar = value
    }

    mutating func encodeNil() {
        set(StateDigest.null)
    }

    mutating func encode(_ value: Bool) {
        set(value ? StateDigest.yes : StateDigest.no)
    }

    mutating func encode(_ value: String) {
        set(StateDigest.string(value))
    }

    mutating func encode(_ value: Double) {
        set(StateDigest.floatingPoint(value))
    }

    mutating func encode(_ value: Float) {
        set(StateDigest.floatingPoint(Double(value)))
    }

    mutating func encode(_ value: Int) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: Int64) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt64) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: Int8) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: Int16) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: Int32) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt8) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt16) {
        set(StateDigest.number(value))
    }

    mutating func encode(_ value: UInt32) {
        set(StateDigest.number(value))
    }

    mutating func encode<Value: Encodable>(_ value: Value) throws {
        set(try StateDigest.digestValue(value))
    }
}
