/// One step of a path into a tree: a member's key, or an array element's position.
///
/// A struct's field is a `field`: the page names it by its index in the key table, which the
/// fields' names fill, rather than by its name each time.
enum PathSegment: Hashable {
    case key(String)
    case field(String)
    case index(Int)

    /// The segment for member `key` of a container of `kind`.
    static func member(_ key: String, of kind: InspectedNode.Kind) -> PathSegment {
        kind == .object ? .field(key) : .key(key)
    }
}
