/// Drops the front of a queue kept as an array read from `head` on, once it is worth it: all of it
/// when every element was read, or the part read once it is 1,024 elements or more and at least
/// half the array; `head` then counts from the new front.
///
/// The inspector's queues (transactions that ended, states waiting to be encoded) are read from the
/// front and appended to at the back; this keeps their reads O(1) and their memory bounded.
func dropConsumedPrefix<Element>(of array: inout [Element], head: inout Int) {
    if head == array.count {
        array = []
        head = 0
    } else if head >= 1_024, head * 2 >= array.count {
        array.removeFirst(head)
        head = 0
    }
}
