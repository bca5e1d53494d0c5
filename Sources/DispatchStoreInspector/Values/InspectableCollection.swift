/// A dictionary, a set or an array: read member by member.
protocol InspectableCollection {
    /// The collection's node, reusing the members of `previous` that have not changed.
    func inspectedNode(previous: InspectedNode?) throws -> InspectedNode
}
