/// For each step of a route, the (lower) indices of the steps it waits for, flattened into one buffer
/// that the machine reads through a ``View``, with no reference counting per step (S7).
final class WaitsForTable: @unchecked Sendable {
    // @unchecked: the buffers are written once, in `init`, and only read after.
    /// Where each step's indices start in ``indices``, and how many there are.
    private let spans: UnsafeMutablePointer<(start: Int32, count: Int32)>
    private let indices: UnsafeMutablePointer<Int32>
    /// How many steps the table has.
    let count: Int

    /// A table of `waitsFor`: for each step, the indices of the steps it waits for.
    init(_ waitsFor: [[Int]]) {
        count = waitsFor.count
        spans = .allocate(capacity: max(1, waitsFor.count))
        let total = waitsFor.reduce(0) { $0 + $1.count }
        indices = .allocate(capacity: max(1, total))
        var next = 0
        for (step, waited) in waitsFor.enumerated() {
            (spans + step).initialize(to: (Int32(next), Int32(waited.count)))
            for index in waited {
                (indices + next).initialize(to: Int32(index))
                next += 1
            }
        }
    }

    deinit {
        spans.deallocate()
        indices.deallocate()
    }

    /// The table as the machine reads it; valid while the table is alive (its route holds it).
    var view: View {
        View(spans: spans, indices: indices)
    }

    /// A table read without reference counting.
    struct View {
        let spans: UnsafePointer<(start: Int32, count: Int32)>
        let indices: UnsafePointer<Int32>

        init(spans: UnsafeMutablePointer<(start: Int32, count: Int32)>, indices: UnsafeMutablePointer<Int32>) {
            self.spans = UnsafePointer(spans)
            self.indices = UnsafePointer(indices)
        }

        /// The indices of the steps step `step` waits for.
        @inline(__always)
        func waited(by step: Int) -> UnsafeBufferPointer<Int32> {
            let span = spans[step]
            return UnsafeBufferPointer(start: indices + Int(span.start), count: Int(span.count))
        }
    }
}
