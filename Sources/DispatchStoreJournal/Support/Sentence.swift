/// `text` as a sentence for an error message: a capital first letter and one final period.
///
/// Error messages are built from clauses (`"cannot read \(path): \(reason)"`) whose reasons may
/// end with a period of their own; this gives every message the same shape.
func sentence(_ text: String) -> String {
    let clause = clause(text)
    return clause.prefix(1).uppercased() + clause.dropFirst() + "."
}

/// `text` without its final periods and spaces, to be joined into a longer sentence.
func clause(_ text: String) -> Substring {
    var text = text[...]
    while text.last == "." || text.last == " " { text = text.dropLast() }
    return text
}
