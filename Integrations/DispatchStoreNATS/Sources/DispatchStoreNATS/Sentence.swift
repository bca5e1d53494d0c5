/// `text` made a sentence for an error message: a capital first letter and one final period, as the
/// messages of DispatchStore's own errors are.
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

/// The message of `error` as a clause of a longer sentence.
func clause(of error: any Error) -> Substring {
    clause("\(error)")
}
