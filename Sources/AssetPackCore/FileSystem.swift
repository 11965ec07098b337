import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Paths

/// The path calls: `stat`, `lstat`, `rename`, `unlink`, `mkdir`, `rmdir`, `chmod`, `access`,
/// `readlink`, `realpath`, `mkdtemp`, `statvfs`.
package enum FileSystem {
    /// `stat(2)`: follows symbolic links.
    package static func stat(_ path: String) throws(Errno) -> FileStatus {
        var st = CStat()
        try check(system_stat(path, &st))
        return FileStatus(st)
    }

    /// `lstat(2)`: a symbolic link is described itself.
    package static func lstat(_ path: String) throws(Errno) -> FileStatus {
        var st = CStat()
        try check(system_lstat(path, &st))
        return FileStatus(st)
    }

    /// `rename(2)`: atomically replaces `destination`.
    package static func rename(_ source: String, to destination: String) throws(Errno) {
        try check(system_rename(source, destination))
    }

    /// `unlink(2)`.
    package static func unlink(_ path: String) throws(Errno) {
        try check(system_unlink(path))
    }

    /// `mkdir(2)` with `permissions` less the umask.
    package static func mkdir(_ path: String, permissions: mode_t) throws(Errno) {
        try check(system_mkdir(path, permissions))
    }

    /// `rmdir(2)`: removes an empty directory.
    package static func rmdir(_ path: String) throws(Errno) {
        try check(system_rmdir(path))
    }

    /// `chmod(2)`: follows symbolic links.
    package static func chmod(_ path: String, _ permissions: mode_t) throws(Errno) {
        try check(system_chmod(path, permissions))
    }

    /// `access(path, R_OK)`: whether this process may read `path`, by its real user and group.
    package static func checkReadable(_ path: String) throws(Errno) {
        try check(system_access(path, R_OK))
    }

    /// Whether the file at `path` may be changed in place (an append, an update) rather than
    /// replaced by a rename: a regular file this process may write, with no other name. Writing
    /// into a file with another hard link would change that name's content too, and one this
    /// process may not write (but whose folder it may) is replaced as before.
    package static func isSoleWritableFile(_ path: String) -> Bool {
        guard let status = try? lstat(path), status.kind == .regular, status.linkCount == 1 else { return false }
        return system_access(path, W_OK) == 0
    }

    /// `readlink(2)`: what a symbolic link points at, as written in it.
    package static func readlink(_ path: String) throws(Errno) -> String {
        guard let target = system_readlink(path) else { throw Errno.current }
        return target
    }

    /// `realpath(3)`: the absolute path with every symbolic link, `.` and `..` resolved.
    package static func realpath(_ path: String) throws(Errno) -> String {
        guard let resolved = system_realpath(path) else { throw Errno.current }
        return resolved
    }

    /// `statvfs(3)`: the bytes an unprivileged process may still write on the file system that
    /// holds `path` (`f_bavail × f_frsize`).
    package static func availableBytes(_ path: String) throws(Errno) -> UInt64 {
        var st = statvfs()
        try check(system_statvfs(path, &st))
        return UInt64(st.f_bavail) &* UInt64(st.f_frsize)
    }

    /// Creates a new directory (mode 0700) from `template`, whose last six characters must be
    /// `XXXXXX` (`mkdtemp(3)`).
    /// - Returns: Its path.
    package static func makeTemporaryDirectory(template: String) throws(Errno) -> String {
        var buffer = Array(template.utf8CString)
        guard buffer.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) != nil else { throw Errno.current }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}
