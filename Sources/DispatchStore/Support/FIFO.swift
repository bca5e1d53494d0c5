/// A first-in, first-out queue with amortised O(1) append and removal from the front.
struct FIFO<Element> {
    private var storage: [Element] = []
    private var head = 0

    var isEmpty: Bool {
        head == storage.count
    }

    var count: Int {
        storage.count - head
    }

    mutating func append(_ element: Element) {
        storage.append(element)
    }

    mutating func prepend(_ element: Element) {
        if head > 0 {
            head -= 1
            storage[head] = element
        } else {
            storage.insert(element, at: 0)
        }
    }

    mutating func popFirst() -> Element? {
        guard head < storage.count else { return nil }
        let element = storage[head]
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.count <= 1024)
            head = 0
        } else if head >= 1024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return element
    }

    mutating func removeAll() -> [Element] {
        let elements = Array(storage[head...])
        storage.removeAll()
        head = 0
        return elements
    }
}
