/// How far driving a transaction run got.
enum DriveResult {
    /// The run is done.
    case completed
    /// The run waits for an operation; whoever finishes it hands the run back to be driven again.
    case suspended
}
