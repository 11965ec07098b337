import AssetPackCore
import Foundation

extension PackReader {
    /// Reads and checks a whole entry with bounded memory, keeping none of its bytes.
    ///
    /// Every check a whole-entry read makes (CRC, MAC or tag, sizes, limits) runs; the bytes
    /// pass through the reader's streaming buffers (at most a few chunks) and are dropped.
    /// - Parameter path: The entry path.
    /// - Returns: The timing record of the read.
    /// - Throws: What `PackReader.readTimed(_:)` throws.
    @discardableResult
    public func verify(_ path: String) throws -> EntryTiming {
        try stream(path) { _ in }
    }

    /// Writes an entry's bytes to `fd` with bounded memory, never handing out bytes that a
    /// check will reject, and returns the timing record.
    ///
    /// - **Container** (a reader whose `authenticatesEachPiece` says so; in a set, the serving
    ///   pack's): chunks are written as they are decoded; each was authenticated by its
    ///   AES-GCM tag first. The entry's CRC-32 is checked at the end (a mismatch means the
    ///   pack was written wrong, not tampered with) and throws after the bytes were written.
    /// - **Zip:** the MAC and CRC cover the whole entry and are known only at its end, so
    ///   nothing is written before they pass. Entries up to `memoryLimit` bytes are held in
    ///   memory; larger ones are spooled to an unlinked temporary file in `spoolDirectory`
    ///   (mode 0600, gone when closed, even on a crash), then copied to `fd`.
    /// - Parameters:
    ///   - path: The entry path.
    ///   - fd: Where to write (a pipe, a terminal, a file).
    ///   - spoolDirectory: Where a zip entry over `memoryLimit` is spooled (default `$TMPDIR` or `/tmp`).
    ///   - memoryLimit: The largest zip entry held in memory.
    ///   - outputName: How to name `fd` in an error message (a path, or "standard output").
    /// - Throws: What reading throws, or `.io` naming `outputName` when writing fails.
    @discardableResult
    public func writeVerified(
        _ path: String, to fd: Int32, outputName: String = "output",
        spoolDirectory: String = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp",
        memoryLimit: UInt64 = 64 << 20
    ) throws -> EntryTiming {
        // This first lookup is the one that opens the index segments it reaches (a version-8
        // container's): its time is the record's lookup, not hidden before it.
        var first = 0.0
        guard let info = try Stopwatch.time(&first, { try lookup(path) }) else { throw noSuchEntry(path) }
        func counted(_ timing: EntryTiming) -> EntryTiming {
            var t = timing
            t.lookup += first
            t.total += first
            return t
        }
        let fd = FileDescriptor(rawValue: fd)  // the caller's: not closed here
        if authenticatesEachPiece(path) {
            return counted(try stream(path) { try FileOutput.writeAll(fd, $0, path: outputName) })
        }
        if info.size <= memoryLimit {
            let (bytes, timing) = try readTimed(path)
            try bytes.withUnsafeBytes { try FileOutput.writeAll(fd, $0, path: outputName) }
            return counted(timing)
        }
        let spool = try SpoolFile(in: spoolDirectory)
        defer { spool.close() }
        let timing = try stream(path) { try FileOutput.writeAll(spool.fd, $0, path: spool.name) }
        try spool.copy(to: fd, outputName: outputName)
        return counted(timing)
    }
}

/// An unlinked temporary file: its name is gone as soon as it exists, so nothing is left behind.
private final class SpoolFile {
    let fd: FileDescriptor
    let name: String

    init(in directory: String) throws {
        do {  // mkstemp: mode 0600
            (fd, name) = try FileDescriptor.openUniqueTemporary(template: "\(directory)/.assetpack-spool-XXXXXX")
        } catch {
            throw error.io("cannot create a spool file in \(directory)")
        }
        try? FileSystem.unlink(name)
    }

    /// Copies everything written so far to `out`.
    func copy(to out: FileDescriptor, outputName: String) throws {
        do { try fd.seek(to: 0) } catch { throw error.io("cannot rewind \(name)") }
        try FileChunks.forEach(fd: fd, name: name, chunkSize: 1 << 20) {
            try FileOutput.writeAll(out, $0, path: outputName)
        }
    }

    func close() { try? fd.close() }
}
