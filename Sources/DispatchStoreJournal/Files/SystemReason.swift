import DispatchStore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a system call on a path failed, in words that name what is wrong: the system's message, and
/// for the errors that come from another part of the path, that part.
///
/// `No such file or directory (the directory /var/lib/app does not exist)`,
/// `Not a directory (/var/lib/app is a regular file)`, `Too many levels of symbolic links (a symbolic link
/// loop)`.
package enum SystemReason {
    /// The reason for `code` (an `errno` value) from a call on `path`.
    package static func describe(_ code: Int32, path: String) -> String {
        let message = String(cString: strerror(code))
        switch code {
        case ENOENT:
            let parent = (path as NSString).deletingLastPathComponent
            guard !parent.isEmpty, !exists(parent) else { return message }
            return "\(message) (the directory \(missingAncestor(of: parent)) does not exist)"
        case ENOTDIR:
            return fileInTheWay(of: path).map { "\(message) (\($0.path) is \(kind($0.mode)))" } ?? message
        case ELOOP:
            return "\(message) (a symbolic link loop)"
        case EISDIR:
            return "it is a directory"
        default:
            return message
        }
    }

    /// The reason for the current `errno`, from a call on `path`.
    package static func current(path: String) -> String {
        describe(errno, path: path)
    }

    /// What kind of file `mode` (a `stat`'s `st_mode`) is, with an article: `a directory`.
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFIFO: "a pipe"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        default: "a special file"
        }
    }

    private static func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// The highest directory above `path`, or `path` itself, that does not exist.
    private static func missingAncestor(of path: String) -> String {
        var missing = path
        while true {
            let parent = (missing as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != missing, !exists(parent) else { return missing }
            missing = parent
        }
    }

    /// The first part of `path` (not `path` itself) that exists and is not a directory, if any,
    /// with its mode.
    private static func fileInTheWay(of path: String) -> (path: String, mode: mode_t)? {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/").dropLast() {
            prefix += "/" + component
            var status = stat()
            guard stat(prefix, &status) == 0 else { return nil }
            if (status.st_mode & S_IFMT) != S_IFDIR {
                return (prefix.hasPrefix("./") ? String(prefix.dropFirst(2)) : prefix, status.st_mode)
            }
        }
        return nil
    }
}
