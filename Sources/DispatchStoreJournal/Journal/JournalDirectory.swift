import DispatchStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The files of a journal directory and the operations on them.
///
/// ```
/// journal.json                          {"format":"DispatchStore journal","version":1}
/// journal.lock                          the id and name of the process that has it open
/// snapshot-00000000000000000041.json    every store's state after the records before generation 41
/// records-00000000000000000041.jsonl    the records written since that snapshot
/// quarantine/                           what recovery could not read, moved or copied aside
/// ```
///
/// Generation 0 has records and no snapshot: it starts from the stores' initial states.
struct JournalDirectory {
    static let formatName = "DispatchStore journal"
    static let formatVersion = 1

    let path: String

    var manifestPath: String {
        path + "/journal.json"
    }

    var quarantinePath: String {
        path + "/quarantine"
    }

    /// The name of the lock file held while a journal has the directory open (``WriterLock``).
    static let lockName = "journal.lock"

    var lockPath: String {
        path + "/" + Self.lockName
    }

    func snapshotPath(_ generation: Int) -> String {
        path + "/snapshot-" + padded(generation) + ".json"
    }

    func recordsPath(_ generation: Int) -> String {
        path + "/records-" + padded(generation) + ".jsonl"
    }

    private func padded(_ generation: Int) -> String {
        let digits = String(generation)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }

    /// What the directory holds.
    struct Listing {
        /// Snapshot generations, oldest first.
        var snapshots: [Int] = []
        /// Record file generations, oldest first.
        var records: [Int] = []
        /// Temporary files left by a crash while a snapshot was written.
        var temporaries: [String] = []
    }

    /// Creates the directory and its manifest if there is none, or checks the manifest, and takes
    /// the directory's writer lock before the manifest is written or read.
    ///
    /// - Returns: The lock, to hold while the journal is open, and whether the journal was created.
    /// - Throws: ``JournalError`` for a path that is not a directory or cannot be created, a directory
    ///   holding other files, a lock another writer holds, or a manifest of a newer format.
    func prepare() throws(JournalError) -> (lock: WriterLock, created: Bool) {
        var status = stat()
        if stat(path, &status) != 0 {
            guard errno == ENOENT || errno == ENOTDIR else {
                throw JournalError(
                    .unwritableDirectory,
                    path: path,
                    message: "cannot use the journal directory \(path): \(SystemReason.current(path: path))"
                )
            }
            if let reason = Self.makeDirectories(path) {
                throw JournalError(
                    .unwritableDirectory,
                    path: path,
                    message: "cannot create the journal directory \(path): \(reason)"
                )
            }
            guard stat(path, &status) == 0 else {
                throw JournalError(
                    .unwritableDirectory,
                    path: path,
                    message: "cannot create the journal directory \(path): \(SystemReason.current(path: path))"
                )
            }
        }
        guard (status.st_mode & S_IFMT) == S_IFDIR else {
            throw JournalError(
                .notAJournal,
                path: path,
                message: "\(path) is \(SystemReason.kind(status.st_mode)), not a journal directory"
            )
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw JournalError(
                .unwritableDirectory,
                path: path,
                message: "the journal directory \(path) is not writable: \(String(cString: strerror(errno)))"
            )
        }
        let manager = FileManager.default
        // `lstat`: a manifest that is a broken or looping link is there, and reported as unreadable.
        var manifestStatus = stat()
        let hasManifest = lstat(manifestPath, &manifestStatus) == 0
        if !hasManifest {
            let entries = (try? manager.contentsOfDirectory(atPath: path)) ?? []
            guard entries.allSatisfy({ $0.hasPrefix(".") || $0 == Self.lockName }) else {
                throw JournalError(
                    .notAJournal,
                    path: path,
                    message: "\(path) holds files but no journal.json (\(manifestPath)), so it is not a journal; "
                        + "the journal writes only into an empty directory or one of its own"
                )
            }
        }
        let lock = try takeLock()
        guard hasManifest || lstat(manifestPath, &manifestStatus) == 0 else {
            let manifest = "{\"format\":\"\(Self.formatName)\",\"version\":\(Self.formatVersion)}\n"
            try writeAtomically(Data(manifest.utf8), to: manifestPath)
            return (lock, true)
        }
        try checkManifest()
        return (lock, false)
    }

    /// Takes the directory's writer lock.
    ///
    /// - Throws: ``JournalError/Code/locked`` naming the holder, or
    ///   ``JournalError/Code/unwritableDirectory`` when the lock file cannot be opened.
    private func takeLock() throws(JournalError) -> WriterLock {
        do {
            return try WriterLock(acquiring: lockPath)
        } catch let error where error.isHeld {
            throw JournalError(
                .locked,
                path: path,
                message: "cannot open the journal in \(path): it is open already, in \(error.reason), which holds "
                    + "the lock \(lockPath); a journal takes one writer at a time: close the other first, or choose "
                    + "another directory"
            )
        } catch {
            throw JournalError(
                .unwritableDirectory,
                path: lockPath,
                message: "cannot open the journal's lock file \(lockPath): \(error.reason)"
            )
        }
    }

    private func checkManifest() throws(JournalError) {
        var bytes: [UInt8] = []
        var status = stat()
        guard stat(manifestPath, &status) == 0 else {
            throw JournalError(
                .unreadableFile,
                path: manifestPath,
                message: "cannot read \(manifestPath): \(SystemReason.current(path: manifestPath))"
            )
        }
        if (status.st_mode & S_IFMT) != S_IFREG {
            throw JournalError(
                .notAJournal,
                path: manifestPath,
                message: "\(manifestPath) is \(SystemReason.kind(status.st_mode)), not the manifest of a DispatchStore "
                    + "journal"
            )
        }
        do {
            // One short line; anything longer is not a manifest, and is not read to its end.
            bytes = try LineReader(path: manifestPath, bufferSize: 4_096, maximumLineLength: 4_096).next()?.bytes ?? []
        } catch let failure where failure.isLineTooLong {
            bytes = []
        } catch {
            throw JournalError(
                .unreadableFile,
                path: manifestPath,
                message: "cannot read \(manifestPath): \(error.reason)"
            )
        }
        let document = try? JSONDocument(bytes: bytes)
        guard let document, let format = document.member("format", in: 0).flatMap(document.string(at:)),
            format == Self.formatName,
            let version = document.member("version", in: 0).flatMap(document.integer(at:)), !version.negative
        else {
            throw JournalError(
                .notAJournal,
                path: manifestPath,
                message: "\(manifestPath) is not the manifest of a DispatchStore journal"
            )
        }
        guard version.magnitude <= UInt64(Self.formatVersion) else {
            throw JournalError(
                .newerFormat,
                path: manifestPath,
                message: "\(manifestPath) says the journal has format version \(version.magnitude), newer than the "
                    + "version \(Self.formatVersion) this program reads; use a newer program (nothing was changed)"
            )
        }
    }

    /// The snapshots, record files and temporary files in the directory.
    func list() throws(JournalError) -> Listing {
        let entries: [String]
        do {
            entries = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw JournalError(.unreadableFile, path: path, message: "cannot list \(path): \(Self.reason(error))")
        }
        var listing = Listing()
        for name in entries {
            if let generation = Self.generation(name, prefix: "snapshot-", suffix: ".json") {
                listing.snapshots.append(generation)
            } else if let generation = Self.generation(name, prefix: "records-", suffix: ".jsonl") {
                listing.records.append(generation)
            } else if name.hasSuffix(".tmp") {
                listing.temporaries.append(path + "/" + name)
            }
        }
        listing.snapshots.sort()
        listing.records.sort()
        return listing
    }

    private static func generation(_ name: String, prefix: String, suffix: String) -> Int? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        let digits = name.dropFirst(prefix.count).dropLast(suffix.count)
        guard digits.count == 20, digits.allSatisfy(\.isASCII) else { return nil }
        return Int(digits)
    }

    // MARK: Writing

    /// Writes `data` to a temporary file, flushes it, renames it to `target` and flushes the
    /// directory: a crash leaves either the old file or the whole new one.
    func writeAtomically(_ data: Data, to target: String) throws(JournalError) {
        let temporary = target + ".tmp"
        let failure: String? = {
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { return String(cString: strerror(errno)) }
            defer { close(descriptor) }
            if let failure = AppendFile.writeAll(data, to: descriptor) { return failure }
            return fsync(descriptor) == 0 ? nil : String(cString: strerror(errno))
        }()
        if let failure {
            unlink(temporary)
            throw JournalError(.writeFailed, path: target, message: "cannot write \(target): \(failure)")
        }
        guard rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw JournalError(.writeFailed, path: target, message: "cannot write \(target): \(reason)")
        }
        syncDirectory()
    }

    /// Flushes the directory's entries (new, renamed and removed files) to the disk.
    func syncDirectory() {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    // MARK: Quarantine

    /// Moves `file` into the quarantine directory, under a name that overwrites nothing.
    ///
    /// - Returns: Its new path.
    func quarantine(moving file: String) throws(JournalError) -> String {
        let target = try quarantineTarget(for: file)
        guard rename(file, target) == 0 else {
            throw JournalError(
                .writeFailed,
                path: file,
                message: "cannot move \(file) aside to \(target): \(String(cString: strerror(errno)))"
            )
        }
        syncDirectory()
        return target
    }

    /// Copies `file` into the quarantine directory, leaving it in place.
    ///
    /// - Returns: The copy's path.
    func quarantine(copying file: String) throws(JournalError) -> String {
        let target = try quarantineTarget(for: file)
        do {
            try FileManager.default.copyItem(atPath: file, toPath: target)
        } catch {
            throw JournalError(
                .writeFailed,
                path: file,
                message: "cannot copy \(file) aside to \(target): \(Self.reason(error))"
            )
        }
        return target
    }

    /// Where a quarantined copy of `file` goes: its name with the time, and a counter if taken.
    func quarantineTarget(for file: String, suffix: String = "") throws(JournalError) -> String {
        if let reason = Self.makeDirectories(quarantinePath) {
            throw JournalError(
                .unwritableDirectory,
                path: quarantinePath,
                message: "cannot create \(quarantinePath): \(reason)"
            )
        }
        let name = (file as NSString).lastPathComponent
        let stamp = Int(Date().timeIntervalSince1970)
        var target = "\(quarantinePath)/\(name)\(suffix).\(stamp)"
        var counter = 1
        while FileManager.default.fileExists(atPath: target) {
            counter += 1
            target = "\(quarantinePath)/\(name)\(suffix).\(stamp)-\(counter)"
        }
        return target
    }

    /// Creates `path` and the directories above it that are missing, with `mkdir(2)`; returns
    /// `nil`, or what failed in words naming the directory (`/dev/null: Not a directory`).
    static func makeDirectories(_ path: String) -> String? {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            return isDirectory.boolValue ? nil : "\(path) is a file"
        }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty && parent != path, let reason = makeDirectories(parent) {
            return reason
        }
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else {
            return String(cString: strerror(errno))
        }
        return nil
    }

    static func reason(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
