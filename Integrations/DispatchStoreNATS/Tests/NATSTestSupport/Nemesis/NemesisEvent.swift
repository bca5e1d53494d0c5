import Foundation

/// One line of a nemesis replica's log (JSON Lines): what it was told, and what it did.
public struct NemesisEvent: Codable, Sendable, Equatable {
    /// What happened.
    public enum Operation: String, Codable, Sendable {
        /// The replica started (or started again): `run`, `snapshot` (the sequence number it loaded),
        /// `sequence` (the stream's end it caught up to).
        case start
        /// The replica could not start (the cluster was down): `error`.
        case startFailed
        /// An append is about to be made: `token`.
        case invoke
        /// The append was acknowledged and applied here: `token`, `sequence`.
        case ok
        /// The append failed: `token`, `code`, `error`.
        case fail
        /// The first message a run applied: `run`, `sequence` (the one after its snapshot's).
        case first
        /// The ledger after the message `sequence`: `digest`.
        case checkpoint
        /// A message was applied out of order: `sequence` after `expected - 1`.
        case violation
        /// The replica reported a problem while running: `code`, `error`.
        case error
        /// The replica stopped on a failure: `code`, `error`.
        case stopped
        /// The replica stopped appending (SIGUSR1), every append of its done: `run`.
        case quiet
        /// The replica finished: `sequence` (the last applied), `digest`, `behind`.
        case final
    }

    /// What happened.
    public var op: Operation
    /// When, in seconds since 1970.
    public var time: Double
    /// The replica's run: 1 for its first start, 2 after a restart, ...
    public var run: Int?
    /// The append's token.
    public var token: String?
    /// A sequence number of the stream.
    public var sequence: UInt64?
    /// The sequence number that was due.
    public var expected: UInt64?
    /// The snapshot a start loaded.
    public var snapshot: UInt64?
    /// An error's code.
    public var code: String?
    /// An error's message.
    public var error: String?
    /// The ledger's digest.
    public var digest: String?
    /// How many messages the replica had not applied.
    public var behind: UInt64?

    /// An event of `op` now.
    public init(_ op: Operation) {
        self.op = op
        time = Date().timeIntervalSince1970
    }
}
