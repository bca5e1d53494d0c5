/// A value's type and bytes, for a value of at most ``capacity`` bytes: what finds a value met
/// before (``ActionTexts``, ``MemberTrees``).
///
/// Equal bytes of two values of one type that are both alive mean the same scalars, the same
/// inline short strings, and the same storage of longer strings and collections; bytes that differ
/// say nothing (an enum's unused payload bytes, for one).
struct ValueBytes: Hashable {
    /// The most bytes a key holds.
    static let capacity = 64

    let type: ObjectIdentifier
    let size: Int
    private var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

    /// The key of `value`; `nil` when it is over ``capacity`` bytes.
    init?<Value>(_ value: Value) {
        guard MemoryLayout<Value>.size <= Self.capacity else { return nil }
        type = ObjectIdentifier(Value.self)
        size = MemoryLayout<Value>.size
        withUnsafeMutableBytes(of: &words) { target in
            withUnsafeBytes(of: value) { source in
                target.copyMemory(from: source)
            }
        }
    }

    static func == (lhs: ValueBytes, rhs: ValueBytes) -> Bool {
        guard lhs.type == rhs.type, lhs.size == rhs.size else { return false }
        return withUnsafeBytes(of: lhs.words) { left in
            withUnsafeBytes(of: rhs.words) { right in
                left.elementsEqual(right)
            }
        }
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(type)
        withUnsafeBytes(of: words) { hasher.combine(bytes: $0) }
    }
}
