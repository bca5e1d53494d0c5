/// A bounded first-in, first-out buffer: appending to a full ring drops its oldest element.
///
/// Indices are logical: 0 is the oldest element kept. The storage grows as elements come, up to
/// `capacity`, so a large capacity (even `Int.max`) costs nothing up front; once full, appending
/// overwrites the oldest slot and costs the same as on an empty ring.
struct Ring<Element> {
    /// The slots; `nil` for a slot freed by `removeLast(_:)` or `remove(at:)` and not reused yet.
    private var storage: [Element?] = []
    /// The slot of the oldest element; non-zero only once the storage reached `capacity`.
    private var head = 0
    private(set) var count = 0
    /// The most elements the ring keeps.
    let capacity: Int

    /// Creates an empty ring.
    ///
    /// - Parameter capacity: The most elements to keep; at least 1.
    init(capacity: Int) {
        precondition(capacity >= 1, "Ring capacity \(capacity) is below 1")
        self.capacity = capacity
    }

    /// Appends `element`, dropping the oldest one when full.
    ///
    /// - Returns: Whether an element was dropped.
    @discardableResult
    mutating func append(_ element: Element) -> Bool {
        if count == capacity {
            storage[head] = element
            head = (head + 1) % storage.count
            return true
        }
        if count < storage.count {
            storage[slot(count)] = element
        } else {
            // Every slot is in use and the ring is not full: the storage never wrapped, so the
            // newest element is the last slot.
            precondition(head == 0, "Ring wrapped (head \(head)) before reaching its capacity \(capacity)")
            storage.append(element)
        }
        count += 1
        return false
    }

    /// Removes the `n` newest elements.
    mutating func removeLast(_ n: Int) {
        for _ in 0..<min(max(n, 0), count) {
            count -= 1
            storage[slot(count)] = nil
        }
    }

    /// Removes the element at `index`, moving the newer ones down by one.
    ///
    /// - Complexity: O(`count - index`).
    mutating func remove(at index: Int) {
        precondition(index >= 0 && index < count, "Ring index \(index) out of range 0..<\(count)")
        for position in index..<(count - 1) {
            storage[slot(position)] = storage[slot(position + 1)]
        }
        count -= 1
        storage[slot(count)] = nil
    }

    subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "Ring index \(index) out of range 0..<\(count)")
            guard let element = storage[slot(index)] else {
                preconditionFailure("Ring slot \(index) is empty below count \(count)")
            }
            return element
        }
        set {
            precondition(index >= 0 && index < count, "Ring index \(index) out of range 0..<\(count)")
            storage[slot(index)] = newValue
        }
    }

    /// The logical index of the last element for which `predicate` holds, searching from the newest.
    func lastIndex(where predicate: (Element) -> Bool) -> Int? {
        var index = count - 1
        while index >= 0 {
            if predicate(self[index]) { return index }
            index -= 1
        }
        return nil
    }

    var elements: [Element] {
        (0..<count).map { self[$0] }
    }

    /// The storage slot of logical index `index`.
    private func slot(_ index: Int) -> Int {
        // `head` is 0 until the storage is full, so the sum cannot overflow before then; once full,
        // both are below `storage.count`, which memory bounds far below `Int.max / 2`.
        (head + index) % storage.count
    }
}

extension Ring: Sendable where Element: Sendable {}
