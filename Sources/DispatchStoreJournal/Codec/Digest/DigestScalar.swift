import DispatchStore

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
