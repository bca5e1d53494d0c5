import Foundation

extension PageData {
    /// Writes the page's facts, up to the paths: the title, the source, the counts, the problems, the
    /// stores, the files, the action types and the recorder.
    func writeHeader(to page: inout PageJSON, firstKept: Int) {
        page.raw("{\"format\":1,\"title\":")
        page.write(state.source.title)
        page.raw(",\"generated\":")
        page.write(Self.isoTime(generated))
        page.raw(",\"source\":{\"kind\":")
        page.write(state.source.kind)
        page.raw(",\"path\":")
        writeOptional(state.source.path, to: &page)
        page.raw(",\"bytes\":")
        writeOptional(state.source.bytes, to: &page)
        page.raw(",\"lines\":")
        writeOptional(state.source.lines, to: &page)
        page.raw(",\"detail\":")
        writeOptional(state.source.detail, to: &page)
        page.raw("},\"start\":")
        page.write((start.timeIntervalSince1970 * 1_000).rounded())
        page.raw(",\"kept\":")
        page.write(state.keptTransactions)
        page.raw(",\"dropped\":")
        page.write(state.droppedTransactions)
        page.raw(",\"limit\":")
        page.write(state.limit)
        page.raw(",\"problemCount\":")
        page.write(state.problemCount)
        page.raw(",\"problems\":[")
        for (index, problem) in state.problems.enumerated() {
            if index > 0 { page.byte(",") }
            page.raw("{\"kind\":")
            page.write(problem.kind)
            page.raw(",\"text\":")
            page.write(problem.message)
            page.raw(",\"file\":")
            writeOptional(problem.file, to: &page)
            page.raw(",\"line\":")
            writeOptional(problem.line, to: &page)
            page.raw(",\"row\":")
            writeOptional(problem.row.map { $0 - firstKept }.flatMap { $0 >= 0 ? $0 : nil }, to: &page)
            page.byte("}")
        }
        page.raw("],\"stores\":[")
        for (index, store) in state.stores.enumerated() {
            if index > 0 { page.byte(",") }
            page.raw("{\"id\":")
            page.write(store.identifier)
            page.raw(",\"type\":")
            page.write(store.typeName)
            page.raw(",\"waitsFor\":")
            writeStrings(store.waitsFor, to: &page)
            page.raw(",\"reflected\":")
            store.reflected ? page.raw("true") : page.raw("false")
            page.raw(",\"failure\":")
            writeOptional(store.encodingFailure, to: &page)
            page.byte("}")
        }
        page.raw("],\"files\":")
        writeStrings(state.files, to: &page)
        page.raw(",\"types\":")
        writeStrings(types, to: &page)
        page.raw(",\"recorder\":")
        if let recorder {
            page.raw("{\"current\":")
            page.write(recorder.current)
            page.raw(",\"entries\":[")
            for (index, entry) in recorder.entries.enumerated() {
                if index > 0 { page.byte(",") }
                page.byte("[")
                page.write(entry.id)
                page.byte(",")
                page.write(entry.transactions)
                page.byte(",")
                writeOptional(entry.key, to: &page)
                page.byte("]")
            }
            page.raw("]}")
        } else {
            page.raw("null")
        }
    }
}
