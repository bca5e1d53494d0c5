/// Forty-eight bytes that push the following stored properties past the 16-byte object header and
/// onto the next 64-byte cache line.
struct CacheLinePadding: Sendable {
    private let words: (Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0)
}
