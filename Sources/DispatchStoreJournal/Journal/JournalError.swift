public import DispatchStore

/// A problem opening, recovering or writing a ``Journal``, naming the file and, where one is
/// involved, the line or byte and the store.
///
/// Thrown when the journal cannot open (``Journal/init(directory:dispatcher:snapshotEvery:syncsToDisk:migrations:onError:)``)
/// and by ``Journal/close()``; listed in ``Journal/Recovery/problems`` for what recovery worked
/// around (a torn tail, a corrupt snapshot, an unreadable record); passed to `onError` for failures
/// while running.
public struct JournalError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of problem.
    public struct Code: Hashable, Sendable, CustomStringConvertible, ErrorCode {
        package let name: String

        /// The directory cannot be created or written.
        public static let unwritableDirectory = Code(name: "unwritableDirectory")
        /// Another writer has the journal open: one writer per directory.
        ///
        /// The other writer is another process, or another ``Journal`` in this one; the message
        /// names it.
        public static let locked = Code(name: "locked")
        /// The directory holds files but no journal; the journal will not write into it.
        public static let notAJournal = Code(name: "notAJournal")
        /// A file of the journal cannot be read.
        public static let unreadableFile = Code(name: "unreadableFile")
        /// The journal or a snapshot was written by a newer version of the format.
        public static let newerFormat = Code(name: "newerFormat")
        /// A snapshot is damaged or incomplete; recovery moved it aside and used an older one.
        public static let corruptSnapshot = Code(name: "corruptSnapshot")
        /// A snapshot holds a state version newer than the program's.
        public static let newerStateVersion = Code(name: "newerStateVersion")
        /// A snapshot holds an older state version and no ``StateMigration`` upgrades it.
        public static let missingMigration = Code(name: "missingMigration")
        /// A state does not decode, or its migration threw.
        public static let undecodableState = Code(name: "undecodableState")
        /// No snapshot can be read and the records before them were compacted away.
        public static let unrecoverable = Code(name: "unrecoverable")
        /// A store's state or action type is not `Codable`, so the journal cannot keep it.
        public static let notCodable = Code(name: "notCodable")
        /// A store refuses changes made outside its actions (as a replicated store does),
        /// which recovery would make.
        public static let outsideChangeRefused = Code(name: "outsideChangeRefused")
        /// A store had applied actions before the journal was opened.
        public static let storeNotFresh = Code(name: "storeNotFresh")
        /// The records end with a line cut short by a crash; recovery saved and cut it.
        public static let tornTail = Code(name: "tornTail")
        /// A record cannot be read (bad JSON, an unknown action type); recovery skipped it and kept a
        /// copy of its file.
        public static let unreadableRecord = Code(name: "unreadableRecord")
        /// Replaying the records did not reproduce a store's history: a gap, a duplicate, a
        /// checksum mismatch (the ``ActionLogError`` is in ``JournalError/recordError``).
        public static let divergence = Code(name: "divergence")
        /// A snapshot or record names a store that is not registered; its data was ignored.
        public static let unknownStore = Code(name: "unknownStore")
        /// A record or snapshot could not be written.
        public static let writeFailed = Code(name: "writeFailed")
        /// The journal was closed, or stopped after a failed write: the transaction was not recorded.
        public static let closed = Code(name: "closed")
    }

    /// The kind of problem.
    public let code: Code
    /// For problems found in a record file, the action log error describing it.
    public let recordError: ActionLogError?
    /// The file, the line, the store and the message.
    let problem: FileProblem

    /// The file or directory involved.
    public var path: String { problem.path }
    /// The line involved, counting from 1, for problems with one line.
    public var line: Int? { problem.line }
    /// The offset of the first byte involved, when one is.
    public var byteOffset: Int? { problem.byteOffset }
    /// The store involved, if one is.
    public var storeIdentifier: String? { problem.storeIdentifier }
    /// A sentence naming the file, the line or store, and what is wrong.
    public var message: String { problem.message }

    /// Creates an error; the journal creates these, tests may too.
    ///
    /// - Parameters:
    ///   - code: The kind of problem.
    ///   - path: The file or directory involved.
    ///   - line: The line involved, if any.
    ///   - byteOffset: The offset of the first byte involved, if any.
    ///   - storeIdentifier: The store involved, if any.
    ///   - recordError: The record problem behind it, if any.
    ///   - message: A sentence naming what is wrong; a lowercase first letter is capitalized and a
    ///     final period added where it has none.
    public init(
        _ code: Code,
        path: String,
        line: Int? = nil,
        byteOffset: Int? = nil,
        storeIdentifier: String? = nil,
        recordError: ActionLogError? = nil,
        message: String
    ) {
        self.code = code
        self.recordError = recordError
        problem = FileProblem(
            path: path,
            line: line,
            byteOffset: byteOffset,
            storeIdentifier: storeIdentifier,
            message: message
        )
    }

    /// The journal error for a problem found in a record file: the same file, line, store and message.
    init(record error: ActionLogError, code: Code) {
        self.code = code
        recordError = error
        problem = error.problem
    }

    /// The message: a sentence naming the file and, where one is involved, the line or store.
    ///
    /// It does not start with the code: match on ``code`` in code.
    public var description: String {
        message
    }

    /// The code and the message, for logs read by developers: `JournalError(corruptSnapshot): ...`.
    public var debugDescription: String {
        "JournalError(\(code)): \(message)"
    }
}
