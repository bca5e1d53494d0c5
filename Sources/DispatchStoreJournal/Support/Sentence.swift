/// `text` as a sentence for an error message: a capital first letter and one final period.
///
/// Error messages are built from clauses (`"cannot read \(path): \(reason)"`) whose reasons may
/// end with a period of their own; this gives every message the same shape. The NATS integration
/// shapes its messages with it too.
@_spi(DispatchStoreNATS)
public func sentence(_ text: String) -> String {
    let clause = clause(text)
    return clause.prefix(1).uppercased() + clause.dropFirst() + "."
}

/// `text` without its final periods and spaces, to be joined into a longer sentence.
@_spi(DispatchStoreNATS)
public func clause(_ text: String) -> Substring {
    var text = text[...]
    while text.last == "." || text.last == " " { text = text.dropLast() }
    return text
}

/// The message of `error` as a clause of a longer sentence.
@_spi(DispatchStoreNATS)
public func clause(of error: any Error) -> Substring {
    clause("\(error)")
}
