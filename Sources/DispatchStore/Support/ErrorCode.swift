/// What the `Code` of ``DispatchError``, ``ActionLogError`` and ``JournalError`` is: a name to match
/// on, which is also its description.
package protocol ErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// The code's name, for example `malformedLine`.
    var name: String { get }
}

extension ErrorCode {
    /// The code's name, for example `malformedLine`.
    public var description: String {
        name
    }
}
