import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
        /// `O_NOFOLLOW`: fail (`ELOOP`) when the last component is a symbolic link.
        package static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
        /// `O_NONBLOCK`: do not wait for a FIFO's other end (no effect on a regular file's reads).
        package static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
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

    /// Copies `count` bytes at `offset` in this file to `target` at `targetOffset`: in the kernel
    /// (`copy_file_range(2)`, Linux; no copy through user space), else by `pread` and `pwrite`
    /// through a buffer. A source shorter than asked is `EIO`.
    package func copyRange(_ count: Int, at offset: UInt64, to target: FileDescriptor, at targetOffset: UInt64)
        throws(Errno)
    {
        var done = 0
        while let copyFileRange = Self.copyFileRange, done < count {
            var from = off_t(offset) + off_t(done), to = off_t(targetOffset) + off_t(done)
            let n = copyFileRange(rawValue, &from, target.rawValue, &to, count - done, 0)
            if n > 0 {
                done += n
                continue
            }
            if n == 0 { throw Errno(rawValue: EIO) }
            let error = Errno.current
            if error == .interrupted { continue }
            // Not supported between these files (another file system, an old kernel): copy below.
            guard
                error.rawValue == EXDEV || error.rawValue == ENOSYS || error.rawValue == EOPNOTSUPP
                    || error.rawValue == EINVAL
            else { throw error }
            break
        }
        guard done < count else { return }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: min(count - done, 1 << 20), alignment: 16)
        defer { buffer.deallocate() }
        while done < count {
            let want = min(buffer.count, count - done)
            let n = try pread(
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset + UInt64(done))
            if n == 0 { throw Errno(rawValue: EIO) }
            try target.pwriteAll(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), at: targetOffset + UInt64(done))
            done += n
        }
    }

    /// glibc's `copy_file_range` (2.27 and later), looked up at run time: its declaration needs
    /// `_GNU_SOURCE`, which Swift's Glibc module is not built with. `nil` elsewhere.
    private static let copyFileRange:
        (@convention(c) (Int32, UnsafeMutablePointer<off_t>?, Int32, UnsafeMutablePointer<off_t>?, Int, UInt32) -> Int)? =
            {
                #if os(Linux)
                guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "copy_file_range") else { return nil }
                return unsafeBitCast(
                    symbol,
                    to: (@convention(c) (
                        Int32, UnsafeMutablePointer<off_t>?, Int32, UnsafeMutablePointer<off_t>?, Int, UInt32
                    )
                        -> Int).self)
                #else
                return nil
                #endif
            }()

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
