/// The `Encoder` that ``TreeEncoding`` hands to values it does not read directly.
///
/// Containers fill builders, which become nodes when the value is encoded; a builder that ends up
/// with the same keys and the same members as its previous node gives that node back, so that an
/// unchanged struct keeps its identity.
final class TreeEncoder: Encoder {
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The tree of the value this encoder encodes the next version of.
    let previous: InspectedValue?
    /// Trees of members met before (a store's), or `nil`.
    let trees: MemberTrees?
    private var slot: Slot?

    init(previous: InspectedValue?, trees: MemberTrees? = nil) {
        self.previous = previous
        self.trees = trees
    }

    /// The encoded value; an empty object when it encoded nothing.
    func result() -> InspectedValue {
        slot?.value ?? .node(InspectedNode(kind: .object, keys: [], values: []))
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let builder: NodeBuilder
        if case .builder(let existing) = slot, existing.kind == .object {
            builder = existing
        } else {
            builder = NodeBuilder(kind: .object, previous: previous?.node, trees: trees)
            slot = .builder(builder)
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(builder: builder))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let builder = NodeBuilder(kind: .array, previous: previous?.node, trees: trees)
        slot = .builder(builder)
        return UnkeyedContainer(builder: builder)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(encoder: self)
    }

    fileprivate func set(_ value: InspectedValue) {
        slot = .value(value, nil)
    }
}

/// Where an encoded member is: done, or a container or encoder still being filled.
private enum Slot {
    case value(InspectedValue, Fingerprint?)
    case builder(NodeBuilder)
    case encoder(TreeEncoder)

    var value: InspectedValue {
        switch self {
        case .value(let value, _): value
        case .builder(let builder): builder.result()
        case .encoder(let encoder): encoder.result()
        }
    }

    var fingerprint: Fingerprint? {
        if case .value(_, let fingerprint) = self { return fingerprint }
        return nil
    }
}

/// The members of a container being encoded.
private final class NodeBuilder {
    let kind: InspectedNode.Kind
    let previous: InspectedNode?
    let trees: MemberTrees?
    var keys: [String] = []
    var slots: [Slot] = []

    init(kind: InspectedNode.Kind, previous: InspectedNode?, trees: MemberTrees?) {
        self.kind = kind
        self.previous = previous?.kind == kind ? previous : nil
        self.trees = trees
    }

    /// The previous version of the member that comes next under `key` (`nil` for an array).
    func previousMember(_ key: String?) -> (value: InspectedValue, fingerprint: Fingerprint?)? {
        guard let previous else { return nil }
        let index: Int?
        if let key {
            index = previous.position(of: key, hint: slots.count)
        } else {
            index = slots.count < previous.count ? slots.count : nil
        }
        return index.map { (previous.values[$0], previous.fingerprint(at: $0)) }
    }

    func append<Value: Encodable>(_ value: Value, key: String?) throws {
        let earlier = previousMember(key)
        let member = try TreeEncoding.member(
            value,
            previous: earlier?.value,
            previousFingerprint: earlier?.fingerprint,
            trees: trees
        )
        append(.value(member.value, member.fingerprint), key: key)
    }

    func append(_ slot: Slot, key: String?) {
        if let key { keys.append(key) }
        slots.append(slot)
    }

    func result() -> InspectedValue {
        let values = slots.map(\.value)
        if let previous, previous.keys == keys, previous.values == values {
            return .node(previous)
        }
        return .node(InspectedNode(kind: kind, keys: keys, values: values, fingerprints: slots.map(\.fingerprint)))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let builder: NodeBuilder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) throws {
        builder.append(.value(.null, nil), key: key.stringValue)
    }

    mutating func encode(_ value: Bool, forKey key: Key) throws {
        builder.append(.value(.bool(value), nil), key: key.stringValue)
    }

    mutating func encode(_ value: String, forKey key: Key) throws {
        builder.append(.value(.string(value), nil), key: key.stringValue)
    }

    mutating func encode(_ value: Double, forKey key: Key) throws {
        builder.append(.value(.double(value), nil), key: key.stringValue)
    }

    mutating func encode(_ value: Int, forKey key: Key) throws {
        builder.append(.value(.integer(Int64(value)), nil), key: key.stringValue)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try builder.append(value, key: key.stringValue)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = NodeBuilder(
            kind: .object,
            previous: builder.previousMember(key.stringValue)?.value.node,
            trees: builder.trees
        )
        builder.append(.builder(nested), key: key.stringValue)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(builder: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = NodeBuilder(
            kind: .array,
            previous: builder.previousMember(key.stringValue)?.value.node,
            trees: builder.trees
        )
        builder.append(.builder(nested), key: key.stringValue)
        return UnkeyedContainer(builder: nested)
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(named: "super")
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(named: key.stringValue)
    }

    private func superEncoder(named name: String) -> any Encoder {
        let encoder = TreeEncoder(previous: builder.previousMember(name)?.value, trees: builder.trees)
        builder.append(.encoder(encoder), key: name)
        return encoder
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let builder: NodeBuilder
    var codingPath: [any CodingKey] { [] }
    var count: Int { builder.slots.count }

    mutating func encodeNil() throws {
        builder.append(.value(.null, nil), key: nil)
    }

    mutating func encode(_ value: Bool) throws {
        builder.append(.value(.bool(value), nil), key: nil)
    }

    mutating func encode(_ value: String) throws {
        builder.append(.value(.string(value), nil), key: nil)
    }

    mutating func encode(_ value: Int) throws {
        builder.append(.value(.integer(Int64(value)), nil), key: nil)
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try builder.append(value, key: nil)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = NodeBuilder(kind: .object, previous: builder.previousMember(nil)?.value.node, trees: builder.trees)
        builder.append(.builder(nested), key: nil)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(builder: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = NodeBuilder(kind: .array, previous: builder.previousMember(nil)?.value.node, trees: builder.trees)
        builder.append(.builder(nested), key: nil)
        return UnkeyedContainer(builder: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = TreeEncoder(previous: builder.previousMember(nil)?.value, trees: builder.trees)
        builder.append(.encoder(encoder), key: nil)
        return encoder
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let encoder: TreeEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil() throws {
        encoder.set(.null)
    }

    mutating func encode(_ value: Bool) throws {
        encoder.set(.bool(value))
    }

    mutating func encode(_ value: String) throws {
        encoder.set(.string(value))
    }

    mutating func encode(_ value: Double) throws {
        encoder.set(.double(value))
    }

    mutating func encode(_ value: Float) throws {
        // The float's shortest decimal text, not the double's longer one for the same bits.
        encoder.set(Double(value.description).map(InspectedValue.double) ?? .double(Double(value)))
    }

    mutating func encode(_ value: Int) throws {
        encoder.set(.integer(Int64(value)))
    }

    mutating func encode(_ value: Int8) throws {
        encoder.set(.integer(Int64(value)))
    }

    mutating func encode(_ value: Int16) throws {
        encoder.set(.integer(Int64(value)))
    }

    mutating func encode(_ value: Int32) throws {
        encoder.set(.integer(Int64(value)))
    }

    mutating func encode(_ value: Int64) throws {
        encoder.set(.integer(value))
    }

    mutating func encode(_ value: UInt) throws {
        encoder.set(.unsigned(UInt64(value)))
    }

    mutating func encode(_ value: UInt8) throws {
        encoder.set(.unsigned(UInt64(value)))
    }

    mutating func encode(_ value: UInt16) throws {
        encoder.set(.unsigned(UInt64(value)))
    }

    mutating func encode(_ value: UInt32) throws {
        encoder.set(.unsigned(UInt64(value)))
    }

    mutating func encode(_ value: UInt64) throws {
        encoder.set(.unsigned(value))
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.set(try TreeEncoding.fresh(value, previous: encoder.previous, trees: encoder.trees))
    }
}
