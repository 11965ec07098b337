import AssetPackCore
internal import CLibzip
import Foundation

/// libzip's `zip_t` is not thread-safe. Rather than serialise every read behind one lock,
/// the reader keeps a pool of `zip_t` handles over the *same* file: each handle gets its
/// own open file description of the inode opened first (``FileDescriptor/reopen(_:_:)``:
/// `/proc/self/fd` on Linux, else the path checked to be the same inode, so offsets are not
/// shared, and a pack replaced on disk mid-session cannot mix versions). A read
/// borrows a handle, uses it alone, and returns it; the pool grows to the number of
/// threads reading at once.
final class ZipHandlePool: @unchecked Sendable {
    private let fd: FileDescriptor
    private let lock = NSLock()
    private var idle: [OpaquePointer] = []
    private var opened = 0
    private let path: String

    init(path: String) throws {
        self.path = path
        do { fd = try .open(path, .readOnly) } catch { throw error.io("cannot open \(path)") }
    }

    deinit {
        for handle in idle { zip_discard(handle) }
        try? fd.close()
    }

    /// How many `zip_t` handles were opened (each parses the central directory once).
    var handlesOpened: Int { lock.withLock { opened } }

    /// Opens one more `zip_t` over the shared file.
    private func makeHandle() throws -> OpaquePointer {
        // A fresh open file description of the same inode: `dup` would share the offset.
        let copy: FileDescriptor
        do {
            copy = try fd.reopen(path)
        } catch  where error == .staleFileHandle {
            throw AssetPackError(
                .io, "cannot reopen \(path): it was replaced since it was opened", underlying: .errno(error.rawValue))
        } catch {
            throw AssetPackError(.io, "cannot reopen \(path)", underlying: .errno(error.rawValue))
        }
        var code: Int32 = 0
        guard let za = zip_fdopen(copy.rawValue, ZIP_RDONLY, &code) else {
            let system = Errno.current.rawValue
            try? copy.close()
            throw LibzipError.make(code, system: system, context: "cannot open \(path)")
        }
        lock.withLock { opened += 1 }
        return za
    }

    /// The file's size now.
    func fileSize() throws -> UInt64 {
        do { return try fd.status().size } catch { throw error.io("cannot stat \(path)") }
    }

    /// Reads exactly `count` bytes at `offset` with `pread` (no shared offset: safe from any thread).
    /// - Throws: `.integrityFailure` when the file ends first, `.io` for read errors.
    func read(at offset: UInt64, count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            if initialized < count { throw AssetPackError(.integrityFailure, "zip is truncated") }
        }
    }

    /// Fills `buffer` from `offset` or up to the end of the file.
    /// - Returns: The bytes read, fewer than `buffer.count` only at the end of the file.
    /// Runs before every read (a remote reader waits there for the bytes to arrive).
    let hook = ReadHook()

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        if try hook.read(into: buffer, at: offset) { return buffer.count }
        do { return try fd.preadFully(into: buffer, at: offset) } catch { throw error.io("cannot read \(path)") }
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
