/// The Swift collection a node was made from, and its members' values in the node's order when
/// they can be compared with `==`: what the next version's members are compared with.
final class MemberValues<Value, Source> {
    let values: [Value]?
    let source: Source

    init(_ values: [Value]?, source: Source) {
        self.values = values
        self.source = source
    }
}
