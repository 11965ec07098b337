import Foundation

/// Where a pack's bytes come from. A pack format reads a pack only through this protocol, so
/// each format is implemented once for every place a pack can live: a local file
/// (``FileByteSource``), a remote pack's mirror (AssetPackHTTP), later others
/// (docs/ARCHITECTURE.md, "The seam").
///
/// A source's bytes never change while it is open: a local file is held by one descriptor, and
/// a remote source refuses a file that changes on the server. Implementations are safe to use
/// from many threads at once.
package protocol ByteSource: AnyObject, Sendable {
    /// The pack's size in bytes.
    var size: UInt64 { get }
    /// What errors call the pack: its path, or its URL.
    var name: String { get }

    /// Fills `buffer` with the pack's bytes at `offset`, or as many as there are before the end.
    /// - Returns: The bytes read: fewer than `buffer.count` only at the end of the pack.
    /// - Throws: `.io` (a local file), `.remote` (a server), `CancellationError`.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int

    /// Says that the format will read `span` (its header, index or directory) now and again
    /// while the source is open: a remote source fetches it at once and never evicts it. A
    /// local file does nothing.
    func retain(_ span: Range<UInt64>) throws

    /// Runs `body`, which reads the stored bytes `spans` of one entry (each front to back, in
    /// reads of at most `largestRead` bytes). A remote source fetches the spans while `body`
    /// runs (each read waits for its own bytes, so decoding overlaps the download); a local file
    /// just runs `body`.
    func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T
}

extension ByteSource {
    /// ``access(_:largestRead:_:)`` of one span.
    package func access<T>(_ span: Range<UInt64>, largestRead: Int, _ body: () throws -> T) throws -> T {
        try access([span], largestRead: largestRead, body)
    }
}

extension ByteSource {
    /// Fills `buffer` from `offset`; the end of the pack first is damage.
    /// - Throws: `.integrityFailure` ("… is truncated") when the pack ends first, and what
    ///   ``read(into:at:)`` throws.
    package func readExactly(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws {
        if try read(into: buffer, at: offset) < buffer.count {
            throw AssetPackError(.integrityFailure, "\(name) is truncated")
        }
    }

    /// Exactly `count` bytes at `offset` (see ``readExactly(into:at:)``).
    package func bytes(at offset: UInt64, count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            try readExactly(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
            initialized = count
        }
    }

    /// Up to `count` bytes at `offset`: fewer at the end of the pack.
    package func prefix(at offset: UInt64, count: Int) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = try read(into: UnsafeMutableRawBufferPointer(buffer), at: offset)
        }
    }
}

/// A pack in a local file, held open by one descriptor and read with `pread` (no shared
/// offset, so any thread may read; a file replaced on disk meanwhile is not seen).
package final class FileByteSource: ByteSource {
    package let name: String
    package let size: UInt64
    private let fd: FileDescriptor
    /// The descriptor the file is read through (for a copy in the kernel; not to be closed).
    package var descriptor: FileDescriptor { fd }
    /// Whether the descriptor is this source's to close.
    private let owned: Bool

    /// Opens `path` for reading: a regular file (not waiting on a FIFO, whose open would block
    /// until a writer came).
    /// - Throws: `.io` (missing, unreadable), `.invalidArgument` for a directory or another
    ///   special file.
    package init(path: String) throws {
        let fd: FileDescriptor
        do { fd = try .open(path, .readOnly, options: .nonBlocking) } catch { throw error.io("cannot open \(path)") }
        let status: FileStatus
        do { status = try fd.status() } catch {
            try? fd.close()
            throw error.io("cannot stat \(path)")
        }
        if status.kind != .regular {
            try? fd.close()
            throw AssetPackError(
                .invalidArgument, "\(path) is \(status.kind == .directory ? "a directory" : "not a regular file")")
        }
        self.fd = fd
        self.name = path
        self.size = status.size
        owned = true
    }

    /// Reads `size` bytes of a descriptor the caller keeps open and closes (a writer hashing
    /// its own output).
    package init(borrowing fd: FileDescriptor, name: String, size: UInt64) {
        self.fd = fd
        self.name = name
        self.size = size
        owned = false
    }

    deinit { if owned { try? fd.close() } }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        do { return try fd.preadFully(into: buffer, at: offset) } catch { throw error.io("cannot read \(name)") }
    }

    package func retain(_ span: Range<UInt64>) throws {}

    package func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T {
        try body()
    }
}

/// A pack made of spans of other sources (an installed pack with a download's new header and
/// tail over it: what an update in place will make, read before any of it is written). Each part
/// is `span` of this pack, read from `source` at `from`; the spans must tile `0..<size`.
package final class SplicedByteSource: ByteSource {
    package let size: UInt64
    package let name: String
    private let parts: [(span: Range<UInt64>, source: any ByteSource, from: UInt64)]

    /// - Precondition: `parts`, in order, tile `0..<size`.
    package init(_ parts: [(span: Range<UInt64>, source: any ByteSource, from: UInt64)], size: UInt64, name: String) {
        self.parts = parts.filter { !$0.span.isEmpty }.sorted { $0.span.lowerBound < $1.span.lowerBound }
        var at: UInt64 = 0
        for part in self.parts {
            precondition(part.span.lowerBound == at, "spliced spans must tile the pack")
            at = part.span.upperBound
        }
        precondition(at == size, "spliced spans must tile the pack")
        self.size = size
        self.name = name
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        var done = 0
        while done < buffer.count, offset + UInt64(done) < size {
            let at = offset + UInt64(done)
            guard let part = parts.first(where: { $0.span.contains(at) }) else { break }
            let n = Int(min(UInt64(buffer.count - done), part.span.upperBound - at))
            let piece = UnsafeMutableRawBufferPointer(rebasing: buffer[done..<done + n])
            try part.source.readExactly(into: piece, at: part.from + (at - part.span.lowerBound))
            done += n
        }
        return done
    }

    package func retain(_ span: Range<UInt64>) throws {}

    package func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T {
        try body()
    }
}

/// A pack held in memory (fuzz targets, tests).
package final class MemoryByteSource: ByteSource {
    package let bytes: [UInt8]
    package let name: String
    package var size: UInt64 { UInt64(bytes.count) }

    package init(_ bytes: [UInt8], name: String = "memory") {
        self.bytes = bytes
        self.name = name
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) throws -> Int {
        guard offset < size else { return 0 }
        let n = min(buffer.count, bytes.count - Int(offset))
        bytes.withUnsafeBytes {
            buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[Int(offset)..<Int(offset) + n]))
        }
        return n
    }

    package func retain(_ span: Range<UInt64>) throws {}

    package func access<T>(_ spans: [Range<UInt64>], largestRead: Int, _ body: () throws -> T) throws -> T {
        try body()
    }
}
