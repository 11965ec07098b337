import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The package's one file-system layer: every POSIX call on files and paths goes through here, in
// the style of swift-system (typed descriptors, `Errno` errors, `EINTR` retried in one place).
// Platform differences live only in this file: the modification time field, reopening a
// descriptor as an independent open file description, `madvise(MADV_HUGEPAGE)`.
// Errors are `Errno`; turning one into an `AssetPackError` with a message is the caller's job
// (`Errno.io(_:)` in FileIO.swift).

// MARK: - Errno

/// A system error number, as `errno` reports it.
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The C value (`ENOENT`, …).
    package let rawValue: Int32

    /// Wraps a C error number.
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now. Read it right after the failed call: anything else
    /// (cleanup, `close`, an allocation) may change it.
    package static var current: Errno { Errno(rawValue: errno) }

    /// `strerror`'s text ("No such file or directory").
    package var description: String { String(cString: strerror(rawValue)) }

    /// `EINTR`: a signal interrupted the call; every call here retries it.
    package static let interrupted = Errno(rawValue: EINTR)
    /// `ENOENT`.
    package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EEXIST`.
    package static let fileExists = Errno(rawValue: EEXIST)
    /// `ESTALE`: what ``FileDescriptor/reopen(_:)`` throws when the path now names another file.
    package static let staleFileHandle = Errno(rawValue: ESTALE)
}

/// Retries `call` while it fails with `EINTR`; any other failure (`-1`) throws the `errno` it left.
@inline(__always)
private func retryingInterrupts<T: FixedWidthInteger>(_ call: () -> T) throws(Errno) -> T {
    while true {
        let result = call()
        if result != -1 { return result }
        let error = Errno.current
        if error != .interrupted { throw error }
    }
}

/// Throws the `errno` a call left when it returned `-1`; never retries (`close`, `rename`, …).
@inline(__always)
private func check(_ result: Int32) throws(Errno) {
    if result == -1 { throw Errno.current }
}

// The C functions under names of their own: inside `FileDescriptor` and `FileSystem` a method
// called `read` or `stat` would hide the C function of that name.
private typealias CStat = stat
private func system_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func system_close(_ fd: Int32) -> Int32 { close(fd) }
private func system_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
private func system_pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: off_t) -> Int {
    pread(fd, buffer, count, offset)
}
private func system_write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }
private func system_pwrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int, _ offset: off_t) -> Int {
    pwrite(fd, buffer, count, offset)
}
private func system_lseek(_ fd: Int32, _ offset: off_t, _ whence: Int32) -> off_t { lseek(fd, offset, whence) }
#if canImport(Darwin)
// Darwin's fsync hands the data to the drive, whose cache may still reorder or lose it;
// F_FULLFSYNC asks the drive to flush, which the ordering of an append (data, then the
// header slot) needs. File systems without it (some network ones) fall back to fsync.
private func system_fsync(_ fd: Int32) -> Int32 {
    fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd)
}
#else
private func system_fsync(_ fd: Int32) -> Int32 { fsync(fd) }
#endif
private func system_ftruncate(_ fd: Int32, _ size: off_t) -> Int32 { ftruncate(fd, size) }
#if os(Linux)
/// glibc's `fallocate(2)` (the Glibc module does not export it: it needs `_GNU_SOURCE`).
@_silgen_name("fallocate")
private func system_fallocate(_ fd: Int32, _ mode: Int32, _ offset: off_t, _ length: off_t) -> Int32
#endif
private func system_fchmod(_ fd: Int32, _ mode: mode_t) -> Int32 { fchmod(fd, mode) }
private func system_fstat(_ fd: Int32, _ st: inout CStat) -> Int32 { fstat(fd, &st) }
private func system_flock(_ fd: Int32, _ operation: Int32) -> Int32 { flock(fd, operation) }
private func system_stat(_ path: String, _ st: inout CStat) -> Int32 { stat(path, &st) }
private func system_lstat(_ path: String, _ st: inout CStat) -> Int32 { lstat(path, &st) }
private func system_rename(_ from: String, _ to: String) -> Int32 { rename(from, to) }
private func system_unlink(_ path: String) -> Int32 { unlink(path) }
private func system_mkdir(_ path: String, _ mode: mode_t) -> Int32 { mkdir(path, mode) }
private func system_rmdir(_ path: String) -> Int32 { rmdir(path) }
private func system_chmod(_ path: String, _ mode: mode_t) -> Int32 { chmod(path, mode) }
private func system_access(_ path: String, _ mode: Int32) -> Int32 { access(path, mode) }
private func system_readlink(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink(path, &buffer, buffer.count - 1)
    guard n >= 0 else { return nil }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
private func system_statvfs(_ path: String, _ st: inout statvfs) -> Int32 { statvfs(path, &st) }
private func system_realpath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}

// MARK: - FileStatus

/// What `stat`, `lstat` or `fstat` report about a file, in platform-neutral types.
package struct FileStatus: Hashable, Sendable {
    /// The file's type (`st_mode & S_IFMT`).
    package enum Kind: Hashable, Sendable {
        case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, unknown

        /// How an error message names it: "a FIFO".
        package var name: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .symbolicLink: "a symbolic link"
            case .fifo: "a FIFO"
            case .socket: "a socket"
            case .characterDevice: "a character device"
            case .blockDevice: "a block device"
            case .unknown: "of an unknown type"
            }
        }
    }

    /// The file's type.
    package var kind: Kind
    /// Size in bytes (`st_size`).
    package var size: UInt64
    /// Permission bits, with set-user-ID, set-group-ID and sticky (`st_mode & 0o7777`).
    package var permissions: UInt32
    /// The device holding the file (`st_dev`).
    package var device: UInt64
    /// The file's inode number on that device (`st_ino`).
    package var inode: UInt64
    /// Last modification, in nanoseconds since the epoch.
    package var modificationTime: Int64
    /// How many names the file has (`st_nlink`).
    package var linkCount: UInt64

    fileprivate init(_ st: CStat) {
        kind =
            switch st.st_mode & S_IFMT {
            case S_IFREG: .regular
            case S_IFDIR: .directory
            case S_IFLNK: .symbolicLink
            case S_IFIFO: .fifo
            case S_IFSOCK: .socket
            case S_IFCHR: .characterDevice
            case S_IFBLK: .blockDevice
            default: .unknown
            }
        size = UInt64(max(0, st.st_size))
        permissions = UInt32(st.st_mode & 0o7777)
        device = UInt64(truncatingIfNeeded: st.st_dev)
        inode = UInt64(truncatingIfNeeded: st.st_ino)
        linkCount = UInt64(truncatingIfNeeded: st.st_nlink)
        #if canImport(Darwin)
        let time = st.st_mtimespec
        #else
        let time = st.st_mtim
        #endif
        modificationTime = Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }

    /// Whether `other` describes the same file: same device, same inode.
    package func isSameFile(as other: FileStatus) -> Bool {
        device == other.device && inode == other.inode
    }
}

// MARK: - FileDescriptor

/// An open file descriptor. A plain value, like swift-system's: closing it is the owner's job
/// (``close()`` or ``closeAfter(_:)``). Every descriptor opened here is close-on-exec.
package struct FileDescriptor: RawRepresentable, Hashable, Sendable {
    /// The C descriptor.
    package let rawValue: Int32

    /// Wraps a descriptor opened elsewhere (standard output, one handed in by a caller).
    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// How the file is opened: `O_RDONLY`, `O_WRONLY` or `O_RDWR`.
    package struct AccessMode: Hashable, Sendable {
        fileprivate let rawValue: Int32
        package static let readOnly = AccessMode(rawValue: O_RDONLY)
        package static let writeOnly = AccessMode(rawValue: O_WRONLY)
        package static let readWrite = AccessMode(rawValue: O_RDWR)
    }

    /// Flags beside the access mode. `O_CLOEXEC` is always added.
    package struct OpenOptions: OptionSet, Hashable, Sendable {
        package let rawValue: Int32
        package init(rawValue: Int32) { self.rawValue = rawValue }
        /// `O_CREAT`: create the file if it does not exist.
        package static let create = OpenOptions(rawValue: O_CREAT)
        /// `O_EXCL` (with ``create``): fail with `EEXIST` if it does.
        package static let exclusiveCreate = OpenOptions(rawValue: O_EXCL)
        /// `O_TRUNC`.
        package static let truncate = OpenOptions(rawValue: O_TRUNC)
        /// `O_DIRECTORY`: fail with `ENOTDIR` unless the path names a directory (Linux and Darwin
        /// both have it; another system without it would open anything and let `fsync` decide).
        #if os(Linux) || canImport(Darwin)
        package static let directory = OpenOptions(rawValue: O_DIRECTORY)
        #else
        package static let directory = OpenOptions([])
        #endif
    }

    /// Opens `path` (`open(2)`), retrying `EINTR`.
    /// - Parameters:
    ///   - permissions: The mode of a file ``OpenOptions/create`` makes, less the umask.
    /// - Throws: The `Errno` `open` failed with.
    package static func open(
        _ path: String, _ mode: AccessMode, options: OpenOptions = [], permissions: mode_t = 0o666
    ) throws(Errno) -> FileDescriptor {
        let flags = mode.rawValue | options.rawValue | O_CLOEXEC
        return FileDescriptor(rawValue: try retryingInterrupts { system_open(path, flags, permissions) })
    }

    /// Creates and opens a new file from `template`, whose last six characters must be
    /// `XXXXXX` (`mkstemp(3)`: mode 0600, `O_EXCL`).
    /// - Returns: The descriptor and the path it was created at.
    package static func openUniqueTemporary(template: String) throws(Errno) -> (FileDescriptor, String) {
        var buffer = Array(template.utf8CString)
        let fd = buffer.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw Errno.current }
        let path = buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return (FileDescriptor(rawValue: fd), path)
    }

    /// Closes the descriptor. Not retried on `EINTR`: the descriptor is gone either way.
    package func close() throws(Errno) {
        try check(system_close(rawValue))
    }

    /// Runs `body`, then closes the descriptor whatever happened. A failing `close` is ignored:
    /// what mattered (a write's durability) is checked before, with ``fsync()``.
    package func closeAfter<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        defer { _ = system_close(rawValue) }
        return try body()
    }

    /// Reads up to `buffer.count` bytes at the current offset, retrying `EINTR`.
    /// - Returns: The bytes read; 0 at end of file.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingInterrupts { system_read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Reads until `buffer` is full or the file ends.
    /// - Returns: The bytes read: `buffer.count`, or fewer only at end of file.
    package func readFully(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads up to `buffer.count` bytes at `offset` (`pread(2)`: the file offset is neither used
    /// nor moved, so any number of threads may call it at once), retrying `EINTR`.
    /// - Returns: The bytes read; 0 at end of file.
    package func pread(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(Errno) -> Int {
        try retryingInterrupts { system_pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// `pread`s until `buffer` is full or the file ends.
    /// - Returns: The bytes read: `buffer.count`, or fewer only at end of file.
    package func preadFully(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try pread(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + UInt64(done))
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all of `bytes` at the current offset, retrying short writes and `EINTR`.
    /// - Throws: The `Errno` a write failed with (`ENOSPC`, `EFBIG`, `EPIPE`, …).
    package func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < bytes.count {
            done += try retryingInterrupts { system_write(rawValue, bytes.baseAddress! + done, bytes.count - done) }
        }
    }

    /// Writes all of `bytes` at `offset` (`pwrite(2)`), retrying short writes and `EINTR`.
    package func pwriteAll(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(Errno) {
        var done = 0
        while done < bytes.count {
            done += try retryingInterrupts {
                system_pwrite(rawValue, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            }
        }
    }

    /// Moves the file offset to `offset` bytes from the start (`lseek(2)`, `SEEK_SET`).
    /// - Returns: The new offset.
    @discardableResult
    package func seek(to offset: UInt64) throws(Errno) -> UInt64 {
        UInt64(try retryingInterrupts { system_lseek(rawValue, off_t(offset), SEEK_SET) })
    }

    /// Flushes the file's data and metadata to the device (`fsync(2)`; on Darwin `F_FULLFSYNC`,
    /// through the drive's cache).
    package func fsync() throws(Errno) {
        _ = try retryingInterrupts { system_fsync(rawValue) }
    }

    /// Sets the file's size to `size` bytes (cutting or zero-extending it).
    package func truncate(to size: UInt64) throws(Errno) {
        _ = try retryingInterrupts { system_ftruncate(rawValue, off_t(size)) }
    }

    /// Gives the disk blocks of `range` back, keeping the file's size: `fallocate(2)` with
    /// `FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE` on Linux; elsewhere nothing happens (the bytes
    /// stay on disk) and no error is thrown.
    package func punchHole(_ range: Range<UInt64>) throws(Errno) {
        #if os(Linux)
        _ = try retryingInterrupts {
            system_fallocate(
                rawValue, 0x02 | 0x01, off_t(range.lowerBound), off_t(range.upperBound - range.lowerBound))
        }
        #endif
    }

    /// Sets the permission bits exactly, whatever the umask (`fchmod(2)`).
    package func fchmod(_ permissions: mode_t) throws(Errno) {
        _ = try retryingInterrupts { system_fchmod(rawValue, permissions) }
    }

    /// What `fstat(2)` reports about the open file.
    package func status() throws(Errno) -> FileStatus {
        var st = CStat()
        try check(system_fstat(rawValue, &st))
        return FileStatus(st)
    }

    /// Takes an exclusive `flock(2)` on the open file, waiting for it (and retrying `EINTR`).
    package func lockExclusive() throws(Errno) {
        _ = try retryingInterrupts { system_flock(rawValue, LOCK_EX) }
    }

    /// Releases an `flock(2)`.
    package func unlock() throws(Errno) {
        try check(system_flock(rawValue, LOCK_UN))
    }

    /// Opens the file this descriptor has open again, as an independent open file description
    /// (own offset, own libzip state; `dup` would share the offset), read-only or as `mode` says.
    ///
    /// **The rule.** On Linux it opens `/proc/self/fd/N`, which always names this descriptor's
    /// inode, even after the path was renamed over or removed. Where that is unavailable (other
    /// systems, or Linux without `/proc`) it falls back to ``reopenByPath(_:_:)``: reopen by
    /// `path`, then require the same device and inode as this descriptor, and throw
    /// `ESTALE` (``Errno/staleFileHandle``) if the path now names another file. It never
    /// silently reads a file other than the one opened first.
    /// - Parameter path: The path this descriptor was opened with (used by the fallback only).
    package func reopen(_ path: String, _ mode: AccessMode = .readOnly) throws(Errno) -> FileDescriptor {
        #if os(Linux)
        if let copy = try? FileDescriptor.open("/proc/self/fd/\(rawValue)", mode) {
            return copy
        }
        #endif
        return try reopenByPath(path, mode)
    }

    /// ``reopen(_:_:)``'s fallback, callable on its own (tests call it on Linux): opens `path`,
    /// and returns the new descriptor only if it has the same device and inode as this one.
    /// - Throws: `ESTALE` when `path` now names another file (renamed over, replaced); what
    ///   `open` or `fstat` throw otherwise (`ENOENT` once the path is gone).
    package func reopenByPath(_ path: String, _ mode: AccessMode = .readOnly) throws(Errno) -> FileDescriptor {
        let original = try status()
        let copy = try FileDescriptor.open(path, mode)
        let reopened: FileStatus
        do {
            reopened = try copy.status()
        } catch {
            _ = system_close(copy.rawValue)
            throw error
        }
        guard reopened.isSameFile(as: original) else {
            _ = system_close(copy.rawValue)
            throw Errno.staleFileHandle
        }
        return copy
    }
}

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

// MARK: - Memory

/// `madvise(MADV_HUGEPAGE)` over `region`, whose bounds must be page-aligned. Linux only: a no-op
/// elsewhere (Darwin has no transparent huge pages). Advisory: failure is ignored.
package func adviseHugePages(alignedRegion region: UnsafeMutableRawBufferPointer) {
    #if os(Linux)
    _ = madvise(region.baseAddress, region.count, MADV_HUGEPAGE)
    #endif
}

/// Overwrites `buffer` with zeros in a way the compiler may not drop as a dead store, for secrets
/// about to be freed: `explicit_bzero` (glibc), `memset_s` (Darwin). The one memory wiper: key
/// seeds, derived keys and keystream scratch in every module go through it.
package func wipeMemory(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    #if canImport(Darwin)
    _ = memset_s(base, buffer.count, 0, buffer.count)
    #else
    explicit_bzero(base, buffer.count)
    #endif
}

/// SIGINT and SIGTERM, handled on a dispatch queue rather than in a signal handler.
package enum InterruptSignals {
    /// The signal sources installed (kept alive for the process).
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []
    /// Whether the handler ran.
    private static let handled = Atomic<Bool>(false)

    /// Runs `handler` when SIGINT or SIGTERM arrives, then dies of that signal. Call once.
    package static func onInterrupt(_ handler: @escaping @Sendable () -> Void) {
        // A parent may have started us with these blocked (a dispatch worker thread's mask is
        // inherited through posix_spawn); then they would never arrive.
        var mask = sigset_t()
        sigemptyset(&mask)
        sigaddset(&mask, SIGINT)
        sigaddset(&mask, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &mask, nil)
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)  // delivered to the dispatch source instead
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler {
                // Once: a second signal while the first is handled waits for it to end the process.
                guard !handled.exchange(true, ordering: .sequentiallyConsistent) else { return }
                handler()
                // Die of it from this thread: libdispatch's threads block signals, so a signal
                // sent to the process could find no thread to take it and come back to this
                // source (a newcomer saw thousands of "interrupted" lines).
                signal(signalNumber, SIG_DFL)
                var only = sigset_t()
                sigemptyset(&only)
                sigaddset(&only, signalNumber)
                pthread_sigmask(SIG_UNBLOCK, &only, nil)
                raise(signalNumber)
                _exit(128 + signalNumber)
            }
            source.resume()
            sources.append(source)
        }
    }
}
