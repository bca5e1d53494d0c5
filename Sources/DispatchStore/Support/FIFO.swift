/// A first-in, first-out queue in a growable ring buffer: O(1) append, prepend and removal from the
/// front, no shifting of elements.
///
/// A class over raw memory (the capacity is a power of two, so positions wrap with a mask): the
/// queues sit on hot paths, and an array of optionals would pay a uniqueness check, an optional
/// store and a division per operation.
final class FIFO<Element> {
    private var storage: UnsafeMutablePointer<Element>
    private var capacity: Int
    private var head = 0
    private(set) var count = 0

    init() {
        capacity = 16
        storage = .allocate(capacity: capacity)
    }

    deinit {
        for offset in 0..<count {
            (storage + ((head + offset) & (capacity - 1))).deinitialize(count: 1)
        }
        storage.deallocate()
    }

    var isEmpty: Bool {
        count == 0
    }

    func append(_ element: consuming Element) {
        if count == capacity { grow() }
        (storage + ((head + count) & (capacity - 1))).initialize(to: element)
        count += 1
    }

    func prepend(_ element: Element) {
        if count == capacity { grow() }
        head = (head - 1) & (capacity - 1)
        (storage + head).initialize(to: element)
        count += 1
    }

    func popFirst() -> Element? {
        guard count > 0 else { return nil }
        let element = (storage + head).move()
        head = (head + 1) & (capacity - 1)
        count -= 1
        return element
    }

    /// Removes and returns the first element; the queue must not be empty.
    ///
    /// Unlike ``popFirst()``, this builds no `Optional<Element>`, whose metadata unspecialised code
    /// looks up at run time.
    func removeFirst() -> Element {
        precondition(count > 0, "DispatchStore: removeFirst() on an empty queue")
        let element = (storage + head).move()
        head = (head + 1) & (capacity - 1)
        count -= 1
        return element
    }

    /// Moves up to `limit` elements from the front into `buffer`.
    ///
    /// - Returns: How many were moved; the caller owns them (and must move or deinitialize them).
    func popFirst(upTo limit: Int, into buffer: UnsafeMutablePointer<Element>) -> Int {
        let taken = min(limit, count)
        for index in 0..<taken {
            (buffer + index).initialize(to: (storage + ((head + index) & (capacity - 1))).move())
        }
        head = (head + taken) & (capacity - 1)
        count -= taken
        return taken
    }

    /// Moves `count` elements from `buffer` back to the front, in their order.
    func prepend(movingFrom buffer: UnsafeMutablePointer<Element>, count moved: Int) {
        for index in stride(from: moved - 1, through: 0, by: -1) {
            prepend((buffer + index).move())
        }
    }

    private func grow() {
        let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
        for offset in 0..<count {
            (grown + offset).moveInitialize(from: storage + ((head + offset) & (capacity - 1)), count: 1)
        }
        storage.deallocate()
        storage = grown
        capacity *= 2
        head = 0
    }
}
