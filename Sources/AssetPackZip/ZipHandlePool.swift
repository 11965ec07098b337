import AssetPackCore
internal import CLibzip
import Foundation

/// libzip's `zip_t` is not thread-safe. Rather than serialise every read behind one lock,
/// the reader keeps a pool of `zip_t` handles over the *same* file: each handle gets its
/// own open file description of the inode opened first (via `/proc/self/fd`, so offsets are
/// not shared, and a pack replaced on disk mid-session cannot mix versions). A read
/// borrows a handle, uses it alone, and returns it; the pool grows to the number of
/// threads reading at once.
final class ZipHandlePool: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var idle: [OpaquePointer] = []
    private var opened = 0
    private let path: String

    init(path: String) throws {
        self.path = path
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw AssetPackError(.io, "cannot open \(path): \(String(cString: strerror(e)))", underlying: e)
        }
    }

    deinit {
        for handle in idle { zip_discard(handle) }
        close(fd)
    }

    /// How many `zip_t` handles were opened (each parses the central directory once).
    var handlesOpened: Int { lock.withLock { opened } }

    /// Opens one more `zip_t` over the shared file.
    private func makeHandle() throws -> OpaquePointer {
        // A fresh open file description of the same inode: `dup` would share the offset.
        var copy = open("/proc/self/fd/\(fd)", O_RDONLY | O_CLOEXEC)
        if copy < 0 { copy = open(path, O_RDONLY | O_CLOEXEC) }
        guard copy >= 0 else { throw AssetPackError(.io, "cannot reopen \(path)", underlying: errno) }
        var code: Int32 = 0
        guard let za = zip_fdopen(copy, ZIP_RDONLY, &code) else {
            let system = errno
            close(copy)
            throw LibzipError.make(code, system: system, context: "cannot open \(path)")
        }
        lock.withLock { opened += 1 }
        return za
    }

    /// The file's size now.
    func fileSize() throws -> UInt64 {
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw FileOutput.error("cannot stat \(path)") }
        return UInt64(st.st_size)
    }

    /// Reads exactly `count` bytes at `offset` with `pread` (no shared offset: safe from any thread).
    /// - Throws: `.integrityFailure` when the file ends first, `.io` for read errors.
    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            while done < count {
                let n = pread(fd, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw FileOutput.error("cannot read \(path)")
                }
                if n == 0 { throw AssetPackError(.integrityFailure, "zip is truncated") }
                done += n
            }
            initialized = count
        }
    }

    /// Runs `body` with a handle no other thread is using.
    func withHandle<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        lock.lock()
        let reused = idle.popLast()
        lock.unlock()
        let handle = try reused ?? makeHandle()
        defer {
            lock.lock()
            idle.append(handle)
            lock.unlock()
        }
        return try body(handle)
    }
}
