/// A bounded first-in, first-out buffer: appending to a full ring drops its oldest element.
///
/// Indices are logical: 0 is the oldest element kept.
struct Ring<Element> {
    private var storage: [Element?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) {
        storage = Array(repeating: nil, count: max(1, capacity))
    }

    var capacity: Int {
        storage.count
    }

    /// Appends `element`, dropping the oldest one when full.
    ///
    /// - Returns: Whether an element was dropped.
    @discardableResult
    mutating func append(_ element: Element) -> Bool {
        if count == storage.count {
            storage[head] = element
            head = (head + 1) % storage.count
            return true
        }
        storage[(head + count) % storage.count] = element
        count += 1
        return false
    }

    /// Removes the `n` newest elements.
    mutating func removeLast(_ n: Int) {
        for _ in 0..<min(n, count) {
            count -= 1
            storage[(head + count) % storage.count] = nil
        }
    }

    subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "Ring index \(index) out of range 0..<\(count)")
            guard let element = storage[(head + index) % storage.count] else {
                preconditionFailure("Ring slot \(index) is empty below count \(count)")
            }
            return element
        }
        set {
            precondition(index >= 0 && index < count, "Ring index \(index) out of range 0..<\(count)")
            storage[(head + index) % storage.count] = newValue
        }
    }

    var elements: [Element] {
        (0..<count).map { self[$0] }
    }
}
