import DispatchStore

/// The unkeyed and the single-value container, whose `encode` methods have the same signatures and
/// differ only in where a digest goes.
protocol DigestValueSink {
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
