/// One change that turns a tree into its next version; the page applies the same changes.
///
/// `container` is the path of the container that changes, from the root.
enum TreeChange: Equatable {
    /// Sets `member` of the container (an object's, a dictionary's or a set's key, or an array's
    /// position) to `value`, adding it when missing.
    case set(container: [PathSegment], member: PathSegment, value: InspectedValue)
    /// Removes `member` from the container.
    case remove(container: [PathSegment], member: PathSegment)
    /// Replaces `deleteCount` elements of the array from position `index` with `values`.
    case splice(container: [PathSegment], index: Int, deleteCount: Int, values: [InspectedValue])
    /// Replaces the whole tree.
    case replace(InspectedValue)
}
