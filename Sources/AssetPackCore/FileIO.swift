import Foundation

extension Errno {
    /// The `.io` error a failed system call becomes: `"\(what): \(strerror)"`, with this errno as
    /// its ``AssetPackError/Underlying/errno(_:)``.
    package func io(_ what: String) -> AssetPackError {
        AssetPackError(.io, "\(what): \(description)", underlying: .errno(rawValue))
    }
}

/// Reads a file in fixed-size chunks without loading it whole.
package enum FileChunks {
    /// Calls `body` with each chunk of the file at `url`.
    /// - Throws: `.io` if the file cannot be opened or read.
    package static func forEach(
        _ url: URL, chunkSize: Int, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let fd: FileDescriptor
        do { fd = try .open(url.path, .readOnly) } catch { throw error.io("cannot open \(url.path)") }
        try fd.closeAfter { try forEach(fd: fd, name: url.path, chunkSize: chunkSize, body) }
    }

    /// Calls `body` with each chunk read from `fd`, from its current offset to the end.
    /// - Throws: `.io` naming `name` if a read fails.
    package static func forEach(
        fd: FileDescriptor, name: String, chunkSize: Int, _ body: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n: Int
            do { n = try fd.read(into: buffer) } catch { throw error.io("cannot read \(name)") }
            if n == 0 { return }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
    }
}

/// Small write-side helpers shared by the installer, the extractor and the CLI.
package enum FileOutput {
    /// An `.io` error for the last failed system call, naming what was attempted. For code that
    /// calls C directly; code over ``FileDescriptor`` and ``FileSystem`` uses ``Errno/io(_:)``.
    package static func error(_ what: String) -> AssetPackError {
        Errno.current.io(what)
    }

    /// Writes all of `bytes` to `fd`, retrying short writes and `EINTR`.
    /// - Throws: `.io` naming `path` (e.g. `ENOSPC`, `EFBIG`, `EPIPE`).
    package static func writeAll(_ fd: FileDescriptor, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        do { try fd.writeAll(bytes) } catch { throw error.io("cannot write \(path)") }
    }
}
