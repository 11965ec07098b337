import AssetPackCore
import AssetPackCrypto
import Foundation

extension ZipPackJob {
    /// Writes the manifest entry (deflated at the pack's level where that saves 5 %, as any entry;
    /// encrypted like the others) and returns its record. Its paths and sizes compress, its digests
    /// do not: on Wesnoth's 8,662 entries it shrinks by about a third (docs/PERFORMANCE.md).
    func writeManifest(_ manifest: ZipManifest, to out: PackFileWriter) throws -> ZipEntryRecord {
        let content = manifest.encoded()
        let buffer = OwnedBuffer(capacity: encoder.head + content.count + encoder.tail)
        content.withUnsafeBytes {
            UnsafeMutableRawBufferPointer(rebasing: buffer.memory[encoder.head...]).copyMemory(from: $0)
        }
        var deflating = encoder
        deflating.policy = .deflate
        let encoded = try deflating.seal(
            buffer, size: content.count, path: ZipManifest.entryName, saltNumber: files.count, mtime: (0, 0x21),
            decision: true, worker: ZipWorkerContext(level: encoder.level))
        var record = encoded.record
        record.offset = out.position
        try out.append(record.localHeader())
        try out.append(encoded.data.bytes)
        return record
    }

    /// Writes the central directory and the end-of-central-directory record after the entries.
    func writeDirectory(_ records: [ZipEntryRecord], to out: PackFileWriter) throws {
        let directoryOffset = out.position
        var directory = ZipBytes()
        for r in records {
            r.appendCentralRecord(to: &directory)
            if directory.data.count >= 1 << 20 {
                try out.append(directory.data)
                directory.data.removeAll(keepingCapacity: true)
            }
        }
        try out.append(directory.data)
        try out.append(
            ZipEntryRecord.endOfDirectory(
                count: records.count, directoryOffset: directoryOffset, directorySize: out.position - directoryOffset))
    }
}

/// Appends to the pack file through a 1 MiB buffer, with positional writes so that a header
/// can be patched later.
final class PackFileWriter {
    let fd: FileDescriptor
    let path: String
    /// The logical end of the file: where the next byte goes.
    private(set) var position: UInt64 = 0
    private var buffer = [UInt8]()
    private var bufferStart: UInt64 = 0
    private static let capacity = 1 << 20

    init(fd: FileDescriptor, path: String) {
        self.fd = fd
        self.path = path
        buffer.reserveCapacity(Self.capacity)
    }

    func append(_ bytes: [UInt8]) throws { try bytes.withUnsafeBytes { try append($0) } }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if buffer.count + bytes.count > Self.capacity { try flush() }
        if bytes.count >= Self.capacity {
            try write(bytes, at: position)
            position += UInt64(bytes.count)
            bufferStart = position
            return
        }
        buffer.append(contentsOf: bytes)
        position += UInt64(bytes.count)
    }

    func flush() throws {
        if !buffer.isEmpty { try buffer.withUnsafeBytes { try write($0, at: bufferStart) } }
        buffer.removeAll(keepingCapacity: true)
        bufferStart = position
    }

    /// Overwrites bytes already appended.
    func patch(_ bytes: [UInt8], at offset: UInt64) throws {
        try flush()
        try bytes.withUnsafeBytes { try write($0, at: offset) }
    }

    /// Moves the end back to `offset` (what follows is overwritten, or cut by ``finish()``).
    func rewind(to offset: UInt64) throws {
        try flush()
        position = offset
        bufferStart = offset
    }

    /// Appends `length` bytes of `source` from `offset`.
    func copy(from source: FileDescriptor, offset: UInt64, length: UInt64) throws {
        try flush()
        let chunk = OwnedBuffer(capacity: Int(min(length, UInt64(Self.capacity))))
        var done: UInt64 = 0
        while done < length {
            let piece = UnsafeMutableRawBufferPointer(
                rebasing: chunk.memory[0..<Int(min(length - done, UInt64(chunk.memory.count)))])
            let n: Int
            do { n = try source.preadFully(into: piece, at: offset + done) } catch {
                throw error.io("cannot read the previous pack at \(path)")
            }
            guard n == piece.count else { throw AssetPackError(.io, "the previous pack at \(path) ended early") }
            try write(UnsafeRawBufferPointer(piece), at: position)
            position += UInt64(n)
            done += UInt64(n)
        }
        bufferStart = position
    }

    /// Flushes and cuts the file at the logical end.
    func finish() throws {
        try flush()
        do { try fd.truncate(to: position) } catch { throw error.io("cannot write \(path)") }
    }

    private func write(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws {
        do { try fd.pwriteAll(bytes, at: offset) } catch { throw error.io("cannot write \(path)") }
    }
}
