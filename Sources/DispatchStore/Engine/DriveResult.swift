/// How far driving a transaction got.
enum DriveResult {
    /// The run is done.
    case completed
    /// The run waits for an operation; it will be handed back with `Lane.resume(_:)`.
    case suspended
}
