import DispatchStore

/// A standard container whose own storage is copy-on-write: a value when its elements are.
protocol ValueContainer {
    /// Whether the element types are values all the way down.
    static var holdsOnlyValues: Bool { get }
}
