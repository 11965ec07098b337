import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The POSIX calls the file-system layer makes, one thin wrapper each, so the types above them
// (FileDescriptor, FileSystem) name no libc symbol and platform differences stay here.

typealias CStat = stat
func system_open(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
func system_close(_ fd: Int32) -> Int32 { close(fd) }
func system_read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}
func system_pread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ offset: off_t) -> Int {
    pread(fd, buffer, count, offset)
}
func system_write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int { write(fd, buffer, count) }
func system_pwrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int, _ offset: off_t) -> Int {
    pwrite(fd, buffer, count, offset)
}
func system_lseek(_ fd: Int32, _ offset: off_t, _ whence: Int32) -> off_t { lseek(fd, offset, whence) }
#if canImport(Darwin)
// Darwin's fsync hands the data to the drive, whose cache may still reorder or lose it;
// F_FULLFSYNC asks the drive to flush, which the ordering of an append (data, then the
// header slot) needs. File systems without it (some network ones) fall back to fsync.
func system_fsync(_ fd: Int32) -> Int32 {
    fcntl(fd, F_FULLFSYNC) == 0 ? 0 : fsync(fd)
}
#else
func system_fsync(_ fd: Int32) -> Int32 { fsync(fd) }
#endif
func system_ftruncate(_ fd: Int32, _ size: off_t) -> Int32 { ftruncate(fd, size) }
#if os(Linux)
/// glibc's `fallocate(2)` (the Glibc module does not export it: it needs `_GNU_SOURCE`).
@_silgen_name("fallocate")
func system_fallocate(_ fd: Int32, _ mode: Int32, _ offset: off_t, _ length: off_t) -> Int32
#endif
func system_fchmod(_ fd: Int32, _ mode: mode_t) -> Int32 { fchmod(fd, mode) }
func system_fstat(_ fd: Int32, _ st: inout CStat) -> Int32 { fstat(fd, &st) }
func system_flock(_ fd: Int32, _ operation: Int32) -> Int32 { flock(fd, operation) }
func system_stat(_ path: String, _ st: inout CStat) -> Int32 { stat(path, &st) }
func system_lstat(_ path: String, _ st: inout CStat) -> Int32 { lstat(path, &st) }
func system_rename(_ from: String, _ to: String) -> Int32 { rename(from, to) }
func system_unlink(_ path: String) -> Int32 { unlink(path) }
func system_mkdir(_ path: String, _ mode: mode_t) -> Int32 { mkdir(path, mode) }
func system_rmdir(_ path: String) -> Int32 { rmdir(path) }
func system_chmod(_ path: String, _ mode: mode_t) -> Int32 { chmod(path, mode) }
func system_access(_ path: String, _ mode: Int32) -> Int32 { access(path, mode) }
func system_readlink(_ path: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink(path, &buffer, buffer.count - 1)
    guard n >= 0 else { return nil }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
func system_statvfs(_ path: String, _ st: inout statvfs) -> Int32 { statvfs(path, &st) }
func system_realpath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
}
