/// The bytes of a Swift value that identify it while an earlier value holding the same bytes is
/// alive: equal bytes mean the same scalars and the same copy-on-write buffers, which nobody can
/// change while both values share them.
///
/// Only values whose type is plain data, a `String`, or a standard collection or optional of such
/// types get one: a class instance can change behind an unchanged reference.
struct Fingerprint: Equatable {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    private var size: UInt8

    /// The most bytes a fingerprint holds.
    static let capacity = 32

    /// Whether values of `Value` get fingerprints.
    static func applies<Value>(to type: Value.Type) -> Bool {
        MemoryLayout<Value>.size <= capacity && ValueSemantics.isValue(type)
    }

    /// The fingerprint of `value`, or `nil` when its type gets none.
    init?<Value>(of value: Value) {
        guard Self.applies(to: Value.self) else { return nil }
        self.init(unchecked: value)
    }

    /// The fingerprint of `value`, whose type ``applies(to:)``.
    init<Value>(unchecked value: Value) {
        size = UInt8(MemoryLayout<Value>.size)
        withUnsafeMutableBytes(of: &words) { target in
            withUnsafeBytes(of: value) { source in
                target.copyMemory(from: source)
            }
        }
    }

    static func == (lhs: Fingerprint, rhs: Fingerprint) -> Bool {
        lhs.size == rhs.size && lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1
            && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
    }
}
